"""Defect: answers an unknown `_` notification with an error (EXT-006)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-ext-notification": ("EXT-006",)}


class Broken(Client):
    def notification(self, method: str, params: dict[str, Any]) -> None:
        if method.startswith("_"):
            self.write({"id": None, "error": {"code": -32601, "message": "method not found"}})
        super().notification(method, params)


if __name__ == "__main__":
    main(Broken)
