"""Defect: session/load replays the history after its response (SESS-007)."""

from __future__ import annotations

import threading
from typing import Any

from _agent import Agent, main

FAILS = {"session-load": ("SESS-007",)}


class Broken(Agent):
    def on_session_load(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self.session(params)
        self.check_cwd(params)
        threading.Timer(0.05, super().replay, args=(session,)).start()
        return self.session_state(session)


if __name__ == "__main__":
    main(Broken)
