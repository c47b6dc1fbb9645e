"""Defect: Takes 3 s to end a cancelled turn (CANCEL-003)."""

from __future__ import annotations

import time

from _agent import Agent, Session, main

FAILS = {"cancel-prompt": ("CANCEL-003",)}


class Broken(Agent):
    def cancelled(self, session: Session) -> str:
        time.sleep(3)
        return "cancelled"


if __name__ == "__main__":
    main(Broken)
