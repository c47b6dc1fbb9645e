"""Defect: session/load answers without replaying the history (SESS-006)."""

from __future__ import annotations

from _agent import Agent, Session, main

FAILS = {"session-load": ("SESS-006",)}


class Broken(Agent):
    def replay(self, session: Session) -> None:
        pass


if __name__ == "__main__":
    main(Broken)
