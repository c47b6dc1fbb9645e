"""Defect: Answers an unknown _ request with -32600 (EXT-004)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"ext-request-code": ("EXT-004",)}


class Broken(Agent):
    def on_unknown_request(self, request_id: Any, method: str) -> None:
        if method.startswith("_"):
            self.respond_error(request_id, -32600, "no extensions here")
        else:
            super().on_unknown_request(request_id, method)


if __name__ == "__main__":
    main(Broken)
