"""Defect: session/list answers without a sessions array (LIST-004)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"session-list": ("LIST-004",)}


class Broken(Agent):
    def on_session_list(self, params: dict[str, Any]) -> dict[str, Any]:
        result = super().on_session_list(params)
        if params.get("cursor") is None and params.get("cwd") is None:
            return {}
        return result


if __name__ == "__main__":
    main(Broken)
