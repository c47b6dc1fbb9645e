"""Defect: Announces a tool call without its required title (SCHEMA-001)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, Session, main

FAILS = {"schema": ("SCHEMA-001",)}


class Broken(Agent):
    def update(self, session: Session, update: dict[str, Any]) -> None:
        if update.get("sessionUpdate") == "tool_call":
            update = {k: v for k, v in update.items() if k != "title"}
        super().update(session, update)


if __name__ == "__main__":
    main(Broken)
