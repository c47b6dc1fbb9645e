"""Allowed: speaks versions 1 and 2 as claude-agent-acp does. Asked for 65535 it answers 2
(its newest) in version 1's shape, which a v1 client reads; asked for 2 with params
without v2's ``info`` it refuses them; asked for 1 it answers 1."""

from __future__ import annotations

from typing import Any

from _base import Agent, RpcError, main

FAILS: dict[str, tuple[str, ...]] = {}


class Correct(Agent):
    def on_initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("protocolVersion") == 2 and "info" not in params:
            raise RpcError(-32602, "version 2 initialize params expected")
        return super().on_initialize(params)

    def protocol_version(self, requested: Any) -> Any:
        return 1 if requested == 1 else 2


if __name__ == "__main__":
    main(Correct)
