"""Defect: Answers session/resume, which it does not advertise, with success (SESS-030)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"unadvertised-methods": ("SESS-030",)}


class Broken(Agent):
    def on_session_resume(self, params: dict[str, Any]) -> dict[str, Any]:
        return {}


if __name__ == "__main__":
    main(Broken)
