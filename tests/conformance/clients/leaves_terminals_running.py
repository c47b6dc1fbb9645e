"""Defect: leaves unreleased terminals running when it exits (CLIENT-011)."""

from __future__ import annotations

from _client import Client, main

FAILS = {"terminal-orphan": ("CLIENT-011",)}


class Broken(Client):
    def stop_terminals(self) -> None:
        pass


if __name__ == "__main__":
    main(Broken)
