"""Defect: Answers protocolVersion as the string "1" (INIT-003)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"initialize": ("INIT-003",)}


class Broken(Agent):
    def protocol_version(self, requested: Any) -> Any:
        return "1"


if __name__ == "__main__":
    main(Broken)
