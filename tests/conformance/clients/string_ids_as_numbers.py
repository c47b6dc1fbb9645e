"""Defect: answers the request id "900001" as the number 900001 (RPC-003)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-string-ids": ("RPC-003",)}


class Broken(Client):
    def answer(self, rid: Any, result: Any) -> None:
        super().answer(int(rid) if isinstance(rid, str) and rid.isdigit() else rid, result)


if __name__ == "__main__":
    main(Broken)
