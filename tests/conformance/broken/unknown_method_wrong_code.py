"""Defect: Answers an unknown method with -32603 instead of -32601 (RPC-006)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"unknown-method": ("RPC-006",)}


class Broken(Agent):
    def on_unknown_request(self, request_id: Any, method: str) -> None:
        if method.startswith("_"):
            return super().on_unknown_request(request_id, method)
        self.respond_error(request_id, -32603, "internal error")


if __name__ == "__main__":
    main(Broken)
