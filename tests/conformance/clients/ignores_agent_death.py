"""Defect: never notices that the agent died and waits forever (CLIENT-005)."""

from __future__ import annotations

from _client import Client, main

FAILS = {"agent-exit": ("CLIENT-005",), "agent-exit-grandchild": ("CLIENT-005",)}


class Broken(Client):
    def agent_gone(self) -> None:
        pass


if __name__ == "__main__":
    main(Broken)
