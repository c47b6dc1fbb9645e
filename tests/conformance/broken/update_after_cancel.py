"""Defect: Sends a message chunk after the response of a cancelled turn (CANCEL-006)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, Session, main

FAILS = {"cancel": ("CANCEL-006",)}


class Broken(Agent):
    def end_turn(self, request_id: Any, session: Session, stop: str) -> None:
        super().end_turn(request_id, session, stop)
        if stop == "cancelled":
            self.say(session, "stopped")


if __name__ == "__main__":
    main(Broken)
