"""Defect: Keeps running after stdin closes while idle (SHUT-001)."""

from __future__ import annotations

import time

from _agent import Agent, main

FAILS = {"shutdown": ("SHUT-001",)}


class Broken(Agent):
    def end_of_input(self) -> None:
        if any(s.running for s in self.sessions.values()):
            super().end_of_input()
        time.sleep(60)


if __name__ == "__main__":
    main(Broken)
