"""Allowed: as claude-agent-acp without credentials, sessions open but every prompt is
answered -32000 (authentication required). The prompt checks are skipped, not failed; a
refused slow prompt is not a cancellation failure; the exit status is 3."""

from __future__ import annotations

from typing import Any

from _base import Agent, main

FAILS: dict[str, tuple[str, ...]] = {}
EXIT = 3


class Correct(Agent):
    def run_prompt(self, request_id: Any, params: dict[str, Any]) -> None:
        if str(params.get("sessionId")) not in self.sessions:
            super().run_prompt(request_id, params)  # unknown sessions: an error, as before
            return
        self.respond_error(request_id, -32000, "Authentication required")


if __name__ == "__main__":
    main(Correct)
