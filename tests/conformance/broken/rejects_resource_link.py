"""Defect: Refuses prompts with a resource_link block (INIT-014, CONTENT-002)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, RpcError, main

FAILS = {"resource-link": ("INIT-014", "CONTENT-002")}


class Broken(Agent):
    def check_prompt(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        blocks = super().check_prompt(params)
        if any(b.get("type") == "resource_link" for b in blocks):
            raise RpcError(-32602, "resource links are not supported")
        return blocks


if __name__ == "__main__":
    main(Broken)
