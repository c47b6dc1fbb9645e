"""Defect: dies on a `_meta` field in an update (EXT-008)."""

from __future__ import annotations

from typing import Any

from _client import Client, crash, main

FAILS = {"client-meta": ("EXT-008",)}


class Broken(Client):
    def on_update(self, update: dict[str, Any]) -> None:
        if "_meta" in update:
            crash("unexpected field _meta")
        super().on_update(update)


if __name__ == "__main__":
    main(Broken)
