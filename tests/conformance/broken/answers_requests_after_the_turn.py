"""Defect: Takes requests one at a time: a request that arrives while a turn runs waits
until the turn is over (notifications, session/cancel too, still act at once) (RPC-013)."""

from __future__ import annotations

import threading
from typing import Any

from _agent import Agent, main

FAILS = {"request-during-turn": ("RPC-013",)}


class Broken(Agent):
    def __init__(self) -> None:
        super().__init__()
        self.turns = 0
        self.held: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is not None and "id" in message and method != "session/prompt":
            with self.lock:
                if self.turns:
                    self.held.append(message)
                    return
        super().dispatch(message)

    def run_prompt(self, request_id: Any, params: dict[str, Any]) -> None:
        with self.lock:
            self.turns += 1
        try:
            super().run_prompt(request_id, params)
        finally:
            with self.lock:
                self.turns -= 1
                held, self.held = (self.held, []) if not self.turns else ([], self.held)
            for message in held:
                super().dispatch(message)


if __name__ == "__main__":
    main(Broken)
