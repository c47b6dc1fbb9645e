"""Defect: never answers a request for a method it does not have (RPC-005)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-unknown-request": ("RPC-005",)}


class Broken(Client):
    def serve(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        if method.startswith("_") or method in self.handlers():
            super().serve(rid, method, params)


if __name__ == "__main__":
    main(Broken)
