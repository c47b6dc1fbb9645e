"""Defect: Offers a boolean config option to a client that did not advertise them (CFG-003)."""

from __future__ import annotations

from _agent import Agent, main

FAILS = {"capability-gates": ("CFG-003",)}


class Broken(Agent):
    def boolean_options(self) -> bool:
        return True


if __name__ == "__main__":
    main(Broken)
