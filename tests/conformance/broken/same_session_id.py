"""Defect: Gives every session the same id (SESS-002)."""

from __future__ import annotations

from _agent import Agent, main

FAILS = {"session-unique": ("SESS-002",)}


class Broken(Agent):
    def new_session_id(self) -> str:
        return "the-session"


if __name__ == "__main__":
    main(Broken)
