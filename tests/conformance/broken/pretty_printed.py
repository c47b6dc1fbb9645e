"""Defect: Sends its first message chunk pretty-printed, over several lines (TRANS-003)."""

from __future__ import annotations

import json

from _agent import Agent, Session, main

FAILS = {"stdout-clean": ("TRANS-003",)}


class Broken(Agent):
    pretty_sent = False

    def say(self, session: Session, text: str) -> None:
        if self.pretty_sent:
            return super().say(session, text)
        self.pretty_sent = True
        update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        message = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session.id, "update": update},
        }
        self.write_line(json.dumps(message, indent=2))


if __name__ == "__main__":
    main(Broken)
