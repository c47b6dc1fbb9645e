"""Defect: Asks for a terminal's output after releasing it (TERM-007)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"terminal-ids": ("TERM-007",)}


class Broken(Agent):
    def release_terminal(self, ids: dict[str, Any]) -> None:
        super().release_terminal(ids)
        self.call("terminal/output", ids)


if __name__ == "__main__":
    main(Broken)
