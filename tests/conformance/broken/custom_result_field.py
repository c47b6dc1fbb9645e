"""Defect: Adds a field of its own at the root of the prompt result instead of _meta (EXT-002)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, Session, main

FAILS = {"custom-fields": ("EXT-002",)}


class Broken(Agent):
    def end_turn(self, request_id: Any, session: Session, stop: str) -> None:
        self.respond(request_id, {"stopReason": stop, "tokens": 12})


if __name__ == "__main__":
    main(Broken)
