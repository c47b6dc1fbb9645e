"""Defect: Creates a terminal without the terminal capability (TERM-002)."""

from __future__ import annotations

from _agent import Agent, Session, main

FAILS = {"capability-gates": ("TERM-002",)}


class Broken(Agent):
    def turn(self, session: Session, text: str) -> str:
        if self.client_caps.get("terminal") is not True and text != "slow":
            self.call("terminal/create", {"sessionId": session.id, "command": "true"})
        return super().turn(session, text)


if __name__ == "__main__":
    main(Broken)
