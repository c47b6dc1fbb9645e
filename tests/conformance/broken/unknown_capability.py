"""Defect: Puts a capability of its own at the root of agentCapabilities, not in _meta (INIT-017)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"capabilities": ("INIT-017",)}


class Broken(Agent):
    def capabilities(self) -> dict[str, Any]:
        return {**super().capabilities(), "teleport": True}


if __name__ == "__main__":
    main(Broken)
