"""Defect: Creates a session when cwd is a number (RPC-007)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"invalid-params": ("RPC-007",)}


class Broken(Agent):
    def check_cwd(self, params: dict[str, Any]) -> str:
        if not isinstance(params.get("cwd"), str):
            return "/"
        return super().check_cwd(params)


if __name__ == "__main__":
    main(Broken)
