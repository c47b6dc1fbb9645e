"""Defect: Exits when a line is not JSON (RPC-009)."""

from __future__ import annotations

import os

from _agent import Agent, main

FAILS = {"malformed-line": ("RPC-009",)}


class Broken(Agent):
    def on_parse_error(self, line: bytes) -> None:
        os._exit(3)


if __name__ == "__main__":
    main(Broken)
