"""Allowed: the "slow" prompt is not slow; its turn is over, or its answer on the way, by the
time session/cancel arrives. The cancel checks are skipped with that reason, not failed."""

from __future__ import annotations

import time

from _base import Agent, Session, main

FAILS: dict[str, tuple[str, ...]] = {}


class Correct(Agent):
    def slow_turn(self, session: Session) -> str:
        self.say(session, "working")
        time.sleep(0.01)
        return "end_turn"


if __name__ == "__main__":
    main(Correct)
