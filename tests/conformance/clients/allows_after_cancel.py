"""Defect: allows the permission requests of a turn it cancelled (TOOL-003)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"permission-cancel": ("TOOL-003",)}


class Broken(Client):
    def permission(self, params: dict[str, Any]) -> dict[str, Any]:
        self.cancelled.clear()
        return super().permission(params)


if __name__ == "__main__":
    main(Broken)
