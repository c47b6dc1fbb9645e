"""Defect: Answers a request whose id is a string of digits with a numeric id (RPC-003)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"string-ids": ("RPC-003",)}


class Broken(Agent):
    def write(self, message: dict[str, Any]) -> None:
        rid = message.get("id")
        if "method" not in message and isinstance(rid, str) and rid.isdigit():
            message = {**message, "id": int(rid)}
        super().write(message)


if __name__ == "__main__":
    main(Broken)
