"""Defect: goes on with a protocol version it does not speak (INIT-006)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"unsupported-version": ("INIT-006",)}


class Broken(Client):
    def version_ok(self, version: Any) -> bool:
        return True


if __name__ == "__main__":
    main(Broken)
