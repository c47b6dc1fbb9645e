"""Defect: Answers session/set_mode with both a result and an error (RPC-001)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"responses": ("RPC-001",)}


class Broken(Agent):
    def respond(self, request_id: Any, result: Any) -> None:
        if result == {} and self.last_method == "session/set_mode":
            self.write(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {},
                    "error": {"code": -32603, "message": "also"},
                }
            )
        else:
            super().respond(request_id, result)

    last_method = ""

    def dispatch(self, message: dict[str, Any]) -> None:
        self.last_method = str(message.get("method"))
        super().dispatch(message)


if __name__ == "__main__":
    main(Broken)
