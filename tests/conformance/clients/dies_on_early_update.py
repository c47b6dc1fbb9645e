"""Defect: dies on an update for a session it has not been told about yet (CLIENT-002)."""

from __future__ import annotations

from typing import Any

from _client import Client, crash, main

FAILS = {"odd-order": ("CLIENT-002",)}


class Broken(Client):
    def on_update(self, update: dict[str, Any]) -> None:
        if self.session is None:
            crash("an update before session/new was answered")
        super().on_update(update)


if __name__ == "__main__":
    main(Broken)
