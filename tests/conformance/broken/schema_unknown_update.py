"""Defect: Sends a session update kind the schema does not list (SCHEMA-001)."""

from __future__ import annotations

from _agent import Agent, Session, main

FAILS = {"schema": ("SCHEMA-001",)}


class Broken(Agent):
    def say(self, session: Session, text: str) -> None:
        super().say(session, text)
        self.update(session, {"sessionUpdate": "mood_update", "mood": "cheerful"})


if __name__ == "__main__":
    main(Broken)
