"""Defect: dies on a tool call update that comes after its session/cancel (CANCEL-007)."""

from __future__ import annotations

from typing import Any

from _client import Client, crash, main

FAILS = {"updates-after-cancel": ("CANCEL-007",)}


class Broken(Client):
    def on_update(self, update: dict[str, Any]) -> None:
        if self.cancelled.is_set() and update.get("sessionUpdate") == "tool_call_update":
            crash("a tool call update after the cancel")
        super().on_update(update)


if __name__ == "__main__":
    main(Broken)
