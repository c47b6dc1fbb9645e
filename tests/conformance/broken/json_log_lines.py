"""Defect: Logs JSON objects that are not JSON-RPC messages to stdout (TRANS-004)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"stdout-clean": ("TRANS-004",)}


class Broken(Agent):
    def on_session_new(self, params: dict[str, Any]) -> dict[str, Any]:
        self.write({"level": "info", "msg": "new session"})
        return super().on_session_new(params)


if __name__ == "__main__":
    main(Broken)
