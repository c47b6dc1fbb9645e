"""Defect: Answers every session/set_mode request twice (RPC-005)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"responses": ("RPC-005",)}


class Broken(Agent):
    def on_session_set_mode(self, params: dict[str, Any]) -> dict[str, Any]:
        result = super().on_session_set_mode(params)
        self.duplicate = True
        return result

    duplicate = False

    def respond(self, request_id: Any, result: Any) -> None:
        super().respond(request_id, result)
        if self.duplicate:
            self.duplicate = False
            super().respond(request_id, result)


if __name__ == "__main__":
    main(Broken)
