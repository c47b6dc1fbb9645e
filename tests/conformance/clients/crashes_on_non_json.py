"""Defect: dies on a line that is not JSON (CLIENT-001)."""

from __future__ import annotations

from _client import Client, crash, main

FAILS = {"garbage-lines": ("CLIENT-001",)}


class Broken(Client):
    def not_json(self, line: bytes) -> None:
        crash(f"not JSON: {line[:40]!r}")


if __name__ == "__main__":
    main(Broken)
