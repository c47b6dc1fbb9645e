"""Defect: answers with "jsonrpc": "1.0" (RPC-011)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-envelope": ("RPC-011",)}
ALSO = ["client-ext-request"]


class Broken(Client):
    def answer(self, rid: Any, result: Any) -> None:
        self.write({"id": rid, "result": result, "jsonrpc": "1.0"})


if __name__ == "__main__":
    main(Broken)
