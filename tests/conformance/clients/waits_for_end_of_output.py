"""Defect: notices the agent's death only at the end of its output, which a grandchild holds open (CLIENT-005)."""

from __future__ import annotations

from _client import Client, main

FAILS = {"agent-exit-grandchild": ("CLIENT-005",)}


class Broken(Client):
    def watch_exit(self) -> None:
        pass


if __name__ == "__main__":
    main(Broken)
