"""Defect: Accepts session/set_mode with a mode it never offered (MODE-003)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"unknown-mode": ("MODE-003",)}


class Broken(Agent):
    def on_session_set_mode(self, params: dict[str, Any]) -> dict[str, Any]:
        return {}


if __name__ == "__main__":
    main(Broken)
