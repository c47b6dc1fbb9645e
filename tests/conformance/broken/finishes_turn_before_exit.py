"""Defect: After stdin closes, finishes its running turn (30 s) before exiting (SHUT-002)."""

from __future__ import annotations

import time

from _agent import Agent, main

FAILS = {"shutdown-turn": ("SHUT-002",)}


class Broken(Agent):
    def end_of_input(self) -> None:
        while any(s.running for s in self.sessions.values()):
            time.sleep(0.05)
        super().end_of_input()


if __name__ == "__main__":
    main(Broken)
