"""Defect: dies on a `$/` notification it does not know (RCANCEL-003)."""

from __future__ import annotations

from typing import Any

from _client import Client, crash, main

FAILS = {"client-protocol-notification": ("RCANCEL-003",)}


class Broken(Client):
    def notification(self, method: str, params: dict[str, Any]) -> None:
        if method.startswith("$/") and method != "$/cancel_request":
            crash(f"unknown notification {method}")
        super().notification(method, params)


if __name__ == "__main__":
    main(Broken)
