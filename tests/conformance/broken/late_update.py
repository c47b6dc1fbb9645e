"""Defect: Sends a message chunk 100 ms after a normal turn's response (PROMPT-003)."""

from __future__ import annotations

import threading
from typing import Any

from _agent import Agent, Session, main

FAILS = {"turn-order": ("PROMPT-003",)}


class Broken(Agent):
    def end_turn(self, request_id: Any, session: Session, stop: str) -> None:
        super().end_turn(request_id, session, stop)
        if (
            stop == "end_turn"
            and session.history
            and session.history[-1].get("sessionUpdate") != "tool_call"
        ):
            threading.Timer(
                0.1,
                self.update,
                args=(
                    session,
                    {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": "one more thing"},
                    },
                ),
            ).start()


if __name__ == "__main__":
    main(Broken)
