"""Defect: Writes a line that is not UTF-8 right after answering initialize (TRANS-001)."""

from __future__ import annotations

import sys
from typing import Any

from _agent import Agent, main

FAILS = {"stdout-clean": ("TRANS-001",)}


class Broken(Agent):
    def on_initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        result = super().on_initialize(params)
        with self.out_lock:
            sys.stdout.buffer.write(b"\xff\xfe not utf-8\n")
            sys.stdout.flush()
        return result


if __name__ == "__main__":
    main(Broken)
