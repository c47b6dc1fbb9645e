"""Defect: Sends an update for a session that was never set up (PROMPT-006)."""

from __future__ import annotations

from _agent import Agent, Session, main

FAILS = {"update-sessions": ("PROMPT-006",)}


class Broken(Agent):
    def say(self, session: Session, text: str) -> None:
        super().say(session, text)
        self.notify(
            "session/update",
            {
                "sessionId": "ghost",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "boo"},
                },
            },
        )


if __name__ == "__main__":
    main(Broken)
