"""Defect: Asked for version 1, answers 2 (INIT-008)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"initialize": ("INIT-008",)}


class Broken(Agent):
    def protocol_version(self, requested: Any) -> Any:
        return 2


if __name__ == "__main__":
    main(Broken)
