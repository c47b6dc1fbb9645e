"""Defect: Prints a banner on stdout before any message (TRANS-004)."""

from __future__ import annotations

from _agent import Agent, main

FAILS = {"stdout-clean": ("TRANS-004",)}


class Broken(Agent):
    def started(self) -> None:
        self.write_line("corpus agent 1.0 starting up")


if __name__ == "__main__":
    main(Broken)
