"""Defect: session/list takes any cursor as the first page (LIST-009)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"list-cursor": ("LIST-009",)}


class Broken(Agent):
    def on_session_list(self, params: dict[str, Any]) -> dict[str, Any]:
        cursor = params.get("cursor")
        if isinstance(cursor, str) and not cursor.startswith("page:"):
            params = {**params, "cursor": None}
        return super().on_session_list(params)


if __name__ == "__main__":
    main(Broken)
