"""Defect: starts terminals in any folder (SANDBOX-005)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"terminal-cwd-outside": ("SANDBOX-005",)}


class Broken(Client):
    def terminal_cwd(self, cwd: Any) -> str:
        return self.root if cwd is None else str(cwd)


if __name__ == "__main__":
    main(Broken)
