"""Defect: drops session updates that come before it knows the session, that is before
session/new is answered, as a client that subscribes to a session's updates only once it
holds the session does (CLIENT-013)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"early-updates": ("CLIENT-013",)}


class Broken(Client):
    def on_update(self, update: dict[str, Any]) -> None:
        if self.session is not None:
            super().on_update(update)


if __name__ == "__main__":
    main(Broken)
