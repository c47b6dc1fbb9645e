"""Defect: Takes a prompt for a session it does not know as a new session and runs the
turn, updates and all (SESS-029). Those updates name the unknown session because the
checker asked for it: they are the unknown-session check's, not update-sessions'."""

from __future__ import annotations

import os
from typing import Any

from _agent import Agent, Session, main

FAILS = {"unknown-session": ("SESS-029",)}


class Broken(Agent):
    def session(self, params: dict[str, Any]) -> Session:
        sid = str(params.get("sessionId"))
        if sid not in self.sessions:
            self.sessions[sid] = Session(sid, os.getcwd())
        return self.sessions[sid]


if __name__ == "__main__":
    main(Broken)
