"""Defect: A permission request offers two options with the same id (TOOL-005)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"permission-options": ("TOOL-005",)}


class Broken(Agent):
    def permission_options(self) -> list[dict[str, Any]]:
        allow, reject = super().permission_options()
        return [allow, {**reject, "optionId": allow["optionId"]}]


if __name__ == "__main__":
    main(Broken)
