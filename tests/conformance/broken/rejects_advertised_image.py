"""Defect: Advertises image prompts, then refuses them (CONTENT-004)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, RpcError, main

FAILS = {"prompt-content": ("CONTENT-004",)}


class Broken(Agent):
    def check_prompt(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        blocks = super().check_prompt(params)
        if any(b.get("type") == "image" for b in blocks):
            raise RpcError(-32602, "no images today")
        return blocks


if __name__ == "__main__":
    main(Broken)
