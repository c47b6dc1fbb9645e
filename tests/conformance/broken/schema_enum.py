"""Defect: Reports a tool call with status "running", not a ToolCallStatus (SCHEMA-001)."""

from __future__ import annotations

from _agent import Agent, Session, main

FAILS = {"schema": ("SCHEMA-001",)}


class Broken(Agent):
    def progress(self, session: Session, call_id: str) -> None:
        super().progress(session, call_id)
        self.update(
            session,
            {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "running"},
        )


if __name__ == "__main__":
    main(Broken)
