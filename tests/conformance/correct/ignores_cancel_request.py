"""Allowed: ignores $/cancel_request (supporting it is optional); the turn still gets one
answer when session/cancel follows."""

from __future__ import annotations

from typing import Any

from _base import Agent, main

FAILS: dict[str, tuple[str, ...]] = {}


class Correct(Agent):
    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method != "$/cancel_request":
            super().on_notification(method, params)


if __name__ == "__main__":
    main(Correct)
