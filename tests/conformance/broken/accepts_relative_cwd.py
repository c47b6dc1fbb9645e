"""Defect: Creates a session for a relative cwd (SESS-028)."""

from __future__ import annotations

import os
from typing import Any

from _agent import Agent, main

FAILS = {"relative-cwd": ("SESS-028",)}


class Broken(Agent):
    def check_cwd(self, params: dict[str, Any]) -> str:
        cwd = params.get("cwd")
        if isinstance(cwd, str) and not os.path.isabs(cwd):
            return os.path.abspath(cwd)
        return super().check_cwd(params)


if __name__ == "__main__":
    main(Broken)
