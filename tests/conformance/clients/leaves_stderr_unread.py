"""Defect: never reads the agent's stderr: a flood blocks the agent (CLIENT-006)."""

from __future__ import annotations

from _client import Client, main

FAILS = {"stderr-flood": ("CLIENT-006",)}


class Broken(Client):
    def drain_stderr(self) -> None:
        pass


if __name__ == "__main__":
    main(Broken)
