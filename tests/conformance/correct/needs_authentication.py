"""Allowed: session/new needs authentication (-32000) until ``authenticate`` with the agent
method ``token``. Unchecked beyond that, the run ends with exit status 3, failing nothing."""

from __future__ import annotations

from typing import Any

from _base import Agent, RpcError, main

FAILS: dict[str, tuple[str, ...]] = {}
EXIT = 3


class Correct(Agent):
    authenticated = False

    def auth_methods(self) -> list[dict[str, Any]]:
        return [{"id": "token", "name": "Token"}, *super().auth_methods()]

    def on_authenticate(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("methodId") != "token":
            return super().on_authenticate(params)
        self.authenticated = True
        return {}

    def on_session_new(self, params: dict[str, Any]) -> dict[str, Any]:
        if not self.authenticated:
            raise RpcError(-32000, "Authentication required")
        return super().on_session_new(params)


if __name__ == "__main__":
    main(Correct)
