"""Allowed: the "slow" prompt is not slow; its turn is over, its answer on the wire, by the
time session/cancel can be sent. The cancel checks are skipped with that reason, not failed.

Like an agent that answers at once (``examples/echo_agent.py``): the turn's one update and
its answer leave in a single write, so a checker sees the turn over as soon as it sees it
start, however loaded the machine is.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from _base import Agent, Session, main

FAILS: dict[str, tuple[str, ...]] = {}


class Correct(Agent):
    held = threading.local()

    def slow_turn(self, session: Session) -> str:
        self.held.lines = []
        self.say(session, "working")
        return "end_turn"

    def write_line(self, line: str) -> None:
        lines: list[str] | None = getattr(self.held, "lines", None)
        if lines is None:
            super().write_line(line)
        else:
            lines.append(line)

    def end_turn(self, request_id: Any, session: Session, stop: str) -> None:
        lines: list[str] = getattr(self.held, "lines", None) or []
        self.held.lines = None
        answer = {"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": stop}}
        super().write_line("\n".join([*lines, json.dumps(answer)]))


if __name__ == "__main__":
    main(Correct)
