"""Defect: Never releases its terminal (TERM-004)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"terminals-released": ("TERM-004",)}


class Broken(Agent):
    def release_terminal(self, ids: dict[str, Any]) -> None:
        pass


if __name__ == "__main__":
    main(Broken)
