"""Defect: dies on a line longer than it reads (CLIENT-003)."""

from __future__ import annotations

from _client import Client, crash, main

FAILS = {"oversize-line": ("CLIENT-003",)}


class Broken(Client):
    def oversize(self, head: bytes) -> None:
        crash("line too long")


if __name__ == "__main__":
    main(Broken)
