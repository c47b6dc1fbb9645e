"""Defect: Refuses any prompt after a session's first turn (PROMPT-007, CANCEL-008)."""

from __future__ import annotations

from typing import Any, ClassVar

from _agent import Agent, RpcError, main

FAILS = {"second-prompt": ("PROMPT-007",), "after-cancel": ("CANCEL-008",)}


class Broken(Agent):
    used: ClassVar[set[str]] = set()

    def check_prompt(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        if params.get("sessionId") in self.used:
            raise RpcError(-32603, "this session is used up")
        self.used.add(str(params.get("sessionId")))
        return super().check_prompt(params)


if __name__ == "__main__":
    main(Broken)
