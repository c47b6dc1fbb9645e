"""Defect: never answers a `_` request (EXT-003)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-ext-request": ("EXT-003",)}


class Broken(Client):
    def serve(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        if not method.startswith("_"):
            super().serve(rid, method, params)


if __name__ == "__main__":
    main(Broken)
