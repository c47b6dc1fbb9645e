"""Defect: Advertises loadSession as the string "yes" (INIT-017)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, RpcError, main

FAILS = {"capabilities": ("INIT-017",)}


class Broken(Agent):
    def capabilities(self) -> dict[str, Any]:
        return {**super().capabilities(), "loadSession": "yes"}

    def on_session_load(self, params: dict[str, Any]) -> dict[str, Any]:
        raise RpcError(-32601, "Method not found: session/load")


if __name__ == "__main__":
    main(Broken)
