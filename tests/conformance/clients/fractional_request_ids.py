"""Defect: numbers its requests 1.5, 2.5, ... (RPC-004)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-request-ids": ("RPC-004",)}


class Broken(Client):
    def new_id(self) -> Any:
        return super().new_id() + 0.5


if __name__ == "__main__":
    main(Broken)
