"""Defect: session/list for a folder with no sessions lists them all (LIST-005)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"session-list": ("LIST-005",)}


class Broken(Agent):
    def on_session_list(self, params: dict[str, Any]) -> dict[str, Any]:
        result = super().on_session_list(params)
        if not result["sessions"] and params.get("cursor") is None:
            return super().on_session_list({})
        return result


if __name__ == "__main__":
    main(Broken)
