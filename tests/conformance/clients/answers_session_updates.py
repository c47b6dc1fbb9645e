"""Defect: answers session/update notifications (RPC-002)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-notifications": ("RPC-002",)}


class Broken(Client):
    def notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "session/update":
            self.write({"id": None, "result": {}})
        super().notification(method, params)


if __name__ == "__main__":
    main(Broken)
