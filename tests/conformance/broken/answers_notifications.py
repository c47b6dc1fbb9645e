"""Defect: Answers unknown notifications with an error whose id is null (RPC-002)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"notification-unanswered": ("RPC-002",)}


class Broken(Agent):
    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method.startswith(("_", "$/")) and method != "$/cancel_request":
            self.respond_error(None, -32601, f"Method not found: {method}")
        else:
            super().on_notification(method, params)


if __name__ == "__main__":
    main(Broken)
