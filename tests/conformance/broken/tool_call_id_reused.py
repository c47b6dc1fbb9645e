"""Defect: Announces two tool calls with the same id in one session (TOOL-004)."""

from __future__ import annotations

from _agent import Agent, Session, main

FAILS = {"tool-call-ids": ("TOOL-004",)}


class Broken(Agent):
    def tool_call_id(self, session: Session) -> str:
        return "call-1"

    def tools_turn(self, session: Session) -> str:
        super().tools_turn(session)
        return super().tools_turn(session)


if __name__ == "__main__":
    main(Broken)
