"""Defect: Its own extension request to the client carries a fractional id (RPC-004)."""

from __future__ import annotations

import itertools
from typing import Any

from _agent import Agent, main

FAILS = {"agent-request-ids": ("RPC-004",)}


class Broken(Agent):
    halves = itertools.count(0)

    def on_session_new(self, params: dict[str, Any]) -> dict[str, Any]:
        result = super().on_session_new(params)
        request_id = next(self.halves) + 0.5
        self.write({"jsonrpc": "2.0", "id": request_id, "method": "_corpus/hello", "params": {}})
        return result


if __name__ == "__main__":
    main(Broken)
