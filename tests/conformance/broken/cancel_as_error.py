"""Defect: Answers a cancelled turn with a JSON-RPC error (CANCEL-005)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, Session, main

FAILS = {"cancel": ("CANCEL-005",)}


class Broken(Agent):
    def end_turn(self, request_id: Any, session: Session, stop: str) -> None:
        if stop == "cancelled":
            self.respond_error(request_id, -32800, "cancelled")
        else:
            super().end_turn(request_id, session, stop)


if __name__ == "__main__":
    main(Broken)
