"""Defect: Ends a turn for a session it does not know, as if it did (SESS-029)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"unknown-session": ("SESS-029",)}


class Broken(Agent):
    def run_prompt(self, request_id: Any, params: dict[str, Any]) -> None:
        if str(params.get("sessionId")) not in self.sessions:
            self.respond(request_id, {"stopReason": "end_turn"})
            return
        super().run_prompt(request_id, params)


if __name__ == "__main__":
    main(Broken)
