"""Defect: Leaves agentInfo out of the initialize result (INIT-005)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"agent-info": ("INIT-005",)}


class Broken(Agent):
    def on_initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        result = super().on_initialize(params)
        del result["agentInfo"]
        return result


if __name__ == "__main__":
    main(Broken)
