"""Defect: Its -32601 errors have no message (RPC-001)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"responses": ("RPC-001",)}


class Broken(Agent):
    def respond_error(self, request_id: Any, code: int, message: str) -> None:
        if code == -32601:
            self.write({"jsonrpc": "2.0", "id": request_id, "error": {"code": code}})
        else:
            super().respond_error(request_id, code, message)


if __name__ == "__main__":
    main(Broken)
