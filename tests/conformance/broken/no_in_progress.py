"""Defect: A tool call granted permission goes straight to completed (PROMPT-004)."""

from __future__ import annotations

from _agent import Agent, Session, main

FAILS = {"tool-progress": ("PROMPT-004",)}


class Broken(Agent):
    def progress(self, session: Session, call_id: str) -> None:
        pass


if __name__ == "__main__":
    main(Broken)
