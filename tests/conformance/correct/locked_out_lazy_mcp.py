"""Allowed: as an agent without credentials, every prompt is answered -32000, and MCP
servers are connected on a session's first turn, which never comes. mcp-connect is
skipped, not failed; the report lists the auth methods offered, the terminal one only
the full run's client was offered; the exit status is 3."""

from __future__ import annotations

from typing import Any

from _base import Agent, Session, main

FAILS: dict[str, tuple[str, ...]] = {}
EXIT = 3
BLOCKED = ("session/prompt", "api-key", "login (terminal)")


class Correct(Agent):
    def auth_methods(self) -> list[dict[str, Any]]:
        return [{"id": "api-key", "name": "API key"}, *super().auth_methods()]

    def connect_mcp(self, session: Session, servers: list[Any]) -> None:
        pass  # on the first turn

    def run_prompt(self, request_id: Any, params: dict[str, Any]) -> None:
        if str(params.get("sessionId")) not in self.sessions:
            super().run_prompt(request_id, params)  # unknown sessions: an error, as before
            return
        self.respond_error(request_id, -32000, "Authentication required")


if __name__ == "__main__":
    main(Correct)
