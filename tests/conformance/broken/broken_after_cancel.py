"""Defect: Refuses prompts in a session whose turn was cancelled (CANCEL-008)."""

from __future__ import annotations

from typing import Any, ClassVar

from _agent import Agent, RpcError, Session, main

FAILS = {"after-cancel": ("CANCEL-008",)}


class Broken(Agent):
    def cancelled(self, session: Session) -> str:
        self.spoiled.add(session.id)
        return "cancelled"

    spoiled: ClassVar[set[str]] = set()

    def check_prompt(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        if params.get("sessionId") in self.spoiled:
            raise RpcError(-32603, "session broken")
        return super().check_prompt(params)


if __name__ == "__main__":
    main(Broken)
