"""Defect: Ends turns with stopReason "done" (PROMPT-005)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, Session, main

FAILS = {"prompt": ("PROMPT-005",)}


class Broken(Agent):
    def end_turn(self, request_id: Any, session: Session, stop: str) -> None:
        super().end_turn(request_id, session, "done" if stop == "end_turn" else stop)


if __name__ == "__main__":
    main(Broken)
