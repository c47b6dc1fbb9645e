"""Allowed: session/list shows only sessions that have a conversation, as claude-agent-acp
does; a session that was never prompted is not listed."""

from __future__ import annotations

from typing import Any

from _base import Agent, main

FAILS: dict[str, tuple[str, ...]] = {}


class Correct(Agent):
    def on_session_list(self, params: dict[str, Any]) -> dict[str, Any]:
        result = super().on_session_list(params)
        result["sessions"] = [
            info for info in result["sessions"] if self.sessions[info["sessionId"]].history
        ]
        return result


if __name__ == "__main__":
    main(Correct)
