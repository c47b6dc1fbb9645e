"""Defect: Answers a line that is not JSON with id null but error -32603, not -32700 (RPC-010)."""

from __future__ import annotations

from _agent import Agent, main

FAILS = {"malformed-line-error": ("RPC-010",)}


class Broken(Agent):
    def on_parse_error(self, line: bytes) -> None:
        self.respond_error(None, -32603, "Internal error")


if __name__ == "__main__":
    main(Broken)
