"""Defect: Never answers an unknown _ request (EXT-003)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"ext-request": ("EXT-003",)}


class Broken(Agent):
    def on_unknown_request(self, request_id: Any, method: str) -> None:
        if not method.startswith("_"):
            super().on_unknown_request(request_id, method)


if __name__ == "__main__":
    main(Broken)
