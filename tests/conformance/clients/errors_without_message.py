"""Defect: sends errors without a message (RPC-001)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-responses": ("RPC-001",)}
ALSO = ["fs-missing"]


class Broken(Client):
    def answer_error(self, rid: Any, code: int, message: str) -> None:
        self.write({"id": rid, "error": {"code": code}})


if __name__ == "__main__":
    main(Broken)
