"""Defect: Takes audio prompts without advertising audio (CONTENT-003)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"prompt-capabilities": ("CONTENT-003",)}


class Broken(Agent):
    def check_prompt(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        blocks = params.get("prompt") or []
        if any(isinstance(b, dict) and b.get("type") == "audio" for b in blocks):
            return [b for b in blocks if isinstance(b, dict)]
        return super().check_prompt(params)


if __name__ == "__main__":
    main(Broken)
