"""Defect: A version-1 agent that refuses initialize for version 2 instead of answering 1 (INIT-009)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, RpcError, main

FAILS = {"version-newer": ("INIT-009",)}


class Broken(Agent):
    def on_initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("protocolVersion") == 2:
            raise RpcError(-32602, "unsupported version")
        return super().on_initialize(params)


if __name__ == "__main__":
    main(Broken)
