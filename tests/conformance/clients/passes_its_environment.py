"""Defect: gives terminals its whole environment, secrets included (SANDBOX-006)."""

from __future__ import annotations

import os
from typing import Any

from _client import Client, main

FAILS = {"terminal-env": ("SANDBOX-006",)}


class Broken(Client):
    def terminal_env(self, extra: Any) -> dict[str, str]:
        return {**os.environ, **super().terminal_env(extra)}


if __name__ == "__main__":
    main(Broken)
