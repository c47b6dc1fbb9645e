"""Defect: session/new says a select option's current value is one it does not offer (CFG-010)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"config-options": ("CFG-010",)}


class Broken(Agent):
    def on_session_new(self, params: dict[str, Any]) -> dict[str, Any]:
        result = super().on_session_new(params)
        result["configOptions"][0]["currentValue"] = "medium"
        return result


if __name__ == "__main__":
    main(Broken)
