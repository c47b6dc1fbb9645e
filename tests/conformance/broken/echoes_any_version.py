"""Defect: Echoes the requested version, 65535 included (INIT-009)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"version-unknown": ("INIT-009",)}


class Broken(Agent):
    def protocol_version(self, requested: Any) -> Any:
        return requested


if __name__ == "__main__":
    main(Broken)
