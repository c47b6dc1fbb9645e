"""Defect: Answers a line that is not JSON with -32700 and id 0 (RPC-010), not a second initialize answer."""

from __future__ import annotations

from _agent import Agent, main

FAILS = {"malformed-line-error": ("RPC-010",)}


class Broken(Agent):
    def on_parse_error(self, line: bytes) -> None:
        self.respond_error(0, -32700, "Parse error")


if __name__ == "__main__":
    main(Broken)
