"""Defect: Exits on an unknown _ notification (EXT-006)."""

from __future__ import annotations

import os
from typing import Any

from _agent import Agent, main

FAILS = {"ext-notification": ("EXT-006",)}


class Broken(Agent):
    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method.startswith("_"):
            os._exit(4)
        super().on_notification(method, params)


if __name__ == "__main__":
    main(Broken)
