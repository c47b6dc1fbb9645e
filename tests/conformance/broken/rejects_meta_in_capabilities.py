"""Defect: Refuses initialize when the client capabilities carry _meta (EXT-008)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, RpcError, main

FAILS = {"meta-accepted": ("EXT-008",)}


class Broken(Agent):
    def on_initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        if "_meta" in (params.get("clientCapabilities") or {}):
            raise RpcError(-32602, "unexpected _meta")
        return super().on_initialize(params)


if __name__ == "__main__":
    main(Broken)
