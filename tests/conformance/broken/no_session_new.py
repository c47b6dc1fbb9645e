"""Defect: Does not implement session/new (INIT-015)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, RpcError, main

FAILS = {"session-new": ("INIT-015",)}


class Broken(Agent):
    def on_session_new(self, params: dict[str, Any]) -> dict[str, Any]:
        raise RpcError(-32601, "Method not found: session/new")


if __name__ == "__main__":
    main(Broken)
