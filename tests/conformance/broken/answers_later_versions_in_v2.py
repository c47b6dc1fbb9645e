"""Defect: Asked for any version but 1, answers in the v2 draft's shape; a v1 client asking
for 65535 cannot read that (VERSION-001)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"version-draft": ("VERSION-001",)}


class Broken(Agent):
    def on_initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("protocolVersion") == 1:
            return super().on_initialize(params)
        return {"protocolVersion": 2, "info": {"name": self.name, "version": "1.0"}}


if __name__ == "__main__":
    main(Broken)
