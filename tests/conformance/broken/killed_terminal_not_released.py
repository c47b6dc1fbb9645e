"""Defect: Kills its terminal and does not release it (TERM-005)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"terminals-released": ("TERM-005",)}


class Broken(Agent):
    def release_terminal(self, ids: dict[str, Any]) -> None:
        self.call("terminal/kill", ids)


if __name__ == "__main__":
    main(Broken)
