"""Defect: counts `line` from 0 (OVR-002)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"fs-read-lines": ("OVR-002",)}


class Broken(Client):
    def lines(self, text: str, line: Any, limit: Any) -> str:
        return super().lines(text, None if line is None else line + 1, limit)


if __name__ == "__main__":
    main(Broken)
