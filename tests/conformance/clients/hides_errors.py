"""Defect: fails on an error answer without showing it (CLIENT-008)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"prompt-error": ("CLIENT-008",), "session-new-error": ("CLIENT-008",)}


class Broken(Client):
    def show_error(self, what: str, error: dict[str, Any]) -> None:
        pass


if __name__ == "__main__":
    main(Broken)
