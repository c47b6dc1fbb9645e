"""Allowed: sends a session update kind this checker's schema does not list. Update kinds
are an extensible union that newer schemas add to, so it is noted as newer than the
checker's schema, not failed."""

from __future__ import annotations

from _base import Agent, Session, main

FAILS: dict[str, tuple[str, ...]] = {}
NOTES = ("newer than this checker's schema", "'mood_update'")


class Correct(Agent):
    def say(self, session: Session, text: str) -> None:
        super().say(session, text)
        self.update(session, {"sessionUpdate": "mood_update", "mood": "cheerful"})


if __name__ == "__main__":
    main(Correct)
