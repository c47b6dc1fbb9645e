"""Defect: Answers -32800 to every $/cancel_request, even for a request it answered (RCANCEL-001)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"cancel-request": ("RCANCEL-001",)}


class Broken(Agent):
    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "$/cancel_request":
            self.respond_error(params.get("requestId"), -32800, "cancelled")
        super().on_notification(method, params)


if __name__ == "__main__":
    main(Broken)
