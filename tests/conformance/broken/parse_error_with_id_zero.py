"""Defect: Answers a line that is not JSON with -32700 and id 0, where JSON-RPC requires id
null (JSONRPC-001, a MUST); it is not judged a second answer to initialize."""

from __future__ import annotations

from _agent import Agent, main

FAILS = {"malformed-line-error": ("JSONRPC-001",)}


class Broken(Agent):
    def on_parse_error(self, line: bytes) -> None:
        self.respond_error(0, -32700, "Parse error")


if __name__ == "__main__":
    main(Broken)
