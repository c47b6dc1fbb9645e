"""Defect: Updates a tool call it never announced (TOOL-002)."""

from __future__ import annotations

from _agent import Agent, Session, main

FAILS = {"tool-call-updates": ("TOOL-002",)}


class Broken(Agent):
    def tools_turn(self, session: Session) -> str:
        self.update(
            session,
            {"sessionUpdate": "tool_call_update", "toolCallId": "ghost", "status": "completed"},
        )
        return super().tools_turn(session)


if __name__ == "__main__":
    main(Broken)
