"""Defect: Sends a message chunk whose text is a number (SCHEMA-001)."""

from __future__ import annotations

from _agent import Agent, Session, main

FAILS = {"schema": ("SCHEMA-001",)}


class Broken(Agent):
    def say(self, session: Session, text: str) -> None:
        update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": 42}}
        session.history.append(update)
        self.update(session, update)


if __name__ == "__main__":
    main(Broken)
