"""Defect: Never answers a method it does not know (RPC-006): one failure, no cascade."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"unknown-method": ("RPC-006",)}


class Broken(Agent):
    def on_unknown_request(self, request_id: Any, method: str) -> None:
        if method.startswith("_") or method in (
            "session/resume",
            "session/close",
            "session/delete",
            "logout",
        ):
            return super().on_unknown_request(request_id, method)
        # silently dropped


if __name__ == "__main__":
    main(Broken)
