"""Defect: Says the current mode is one it does not offer (MODE-004)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, Session, main

FAILS = {"mode-state": ("MODE-004",)}


class Broken(Agent):
    def session_state(self, session: Session) -> dict[str, Any]:
        state = super().session_state(session)
        state["modes"]["currentModeId"] = "turbo"
        return state


if __name__ == "__main__":
    main(Broken)
