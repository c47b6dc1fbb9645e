"""Defect: Exits on an unknown $/ notification (RCANCEL-003)."""

from __future__ import annotations

import os
from typing import Any

from _agent import Agent, main

FAILS = {"protocol-notification": ("RCANCEL-003",)}


class Broken(Agent):
    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method.startswith("$/") and method != "$/cancel_request":
            os._exit(4)
        super().on_notification(method, params)


if __name__ == "__main__":
    main(Broken)
