"""Defect: closes on a version it does not speak without telling the user (INIT-010)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"unsupported-version": ("INIT-010",)}


class Broken(Client):
    def version_ok(self, version: Any) -> bool:
        return version == 1


if __name__ == "__main__":
    main(Broken)
