"""Defect: Ends normal turns with a result without stopReason (PROMPT-003)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, Session, main

FAILS = {"prompt": ("PROMPT-003",)}


class Broken(Agent):
    def end_turn(self, request_id: Any, session: Session, stop: str) -> None:
        if stop == "end_turn":
            self.respond(request_id, {})
        else:
            super().end_turn(request_id, session, stop)


if __name__ == "__main__":
    main(Broken)
