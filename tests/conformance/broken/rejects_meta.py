"""Defect: Refuses prompts that carry _meta (EXT-008)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, RpcError, main

FAILS = {"meta-accepted": ("EXT-008",)}


class Broken(Agent):
    def check_prompt(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        if "_meta" in params:
            raise RpcError(-32602, "unexpected _meta")
        return super().check_prompt(params)


if __name__ == "__main__":
    main(Broken)
