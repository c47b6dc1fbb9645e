"""Defect: lingers after the turn and dies on an update that comes then (CLIENT-002)."""

from __future__ import annotations

import time
from typing import Any

from _client import Client, crash, main

FAILS = {"late-updates": ("CLIENT-002",)}


class Broken(Client):
    def dispatch(self, message: dict[str, Any]) -> None:
        if "stopReason" in (message.get("result") or {}):
            self.done = True  # read in order: what comes next comes after the turn
        super().dispatch(message)

    def on_update(self, update: dict[str, Any]) -> None:
        if self.done:
            crash("an update after the turn")
        super().on_update(update)

    def after_turn(self, status: int) -> int:
        time.sleep(0.5)  # lingers, reading
        return status

    done = False


if __name__ == "__main__":
    main(Broken)
