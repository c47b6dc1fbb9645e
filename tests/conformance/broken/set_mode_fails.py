"""Defect: Refuses session/set_mode even for an offered mode (MODE-002)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, RpcError, main

FAILS = {"set-mode": ("MODE-002",)}


class Broken(Agent):
    def on_session_set_mode(self, params: dict[str, Any]) -> dict[str, Any]:
        raise RpcError(-32603, "modes are stuck")


if __name__ == "__main__":
    main(Broken)
