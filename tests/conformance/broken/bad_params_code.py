"""Defect: Answers params of the wrong shape with -32603 (RPC-008)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, RpcError, main

FAILS = {"invalid-params-code": ("RPC-008",)}


class Broken(Agent):
    def check_cwd(self, params: dict[str, Any]) -> str:
        if not isinstance(params.get("cwd"), str):
            raise RpcError(-32603, "internal error")
        return super().check_cwd(params)


if __name__ == "__main__":
    main(Broken)
