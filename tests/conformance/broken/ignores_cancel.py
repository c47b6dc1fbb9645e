"""Defect: Ignores session/cancel: the slow turn ends with end_turn a second later (CANCEL-004)."""

from __future__ import annotations

import threading
from typing import Any

from _agent import Agent, Session, main

FAILS = {"cancel": ("CANCEL-004",)}


class Broken(Agent):
    def on_cancel(self, params: dict[str, Any]) -> None:
        session = self.sessions.get(str(params.get("sessionId")))
        if session is not None:
            threading.Timer(1.0, session.cancel.set).start()

    def cancelled(self, session: Session) -> str:
        return "end_turn"


if __name__ == "__main__":
    main(Broken)
