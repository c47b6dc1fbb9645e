"""Defect: writes an empty line after each message (TRANS-003)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-stdin-clean": ("TRANS-003",)}


class Broken(Client):
    def encode(self, message: dict[str, Any]) -> bytes:
        return super().encode(message) + b"\n"


if __name__ == "__main__":
    main(Broken)
