"""Defect: trusts paths with `..` in them (SANDBOX-001)."""

from __future__ import annotations

import os
from typing import Any

from _client import Client, main

FAILS = {"fs-dotdot": ("SANDBOX-001",)}


class Broken(Client):
    def file_path(self, path: Any) -> str:
        if isinstance(path, str) and ".." in path.split("/"):
            return os.path.realpath(path)
        return super().file_path(path)


if __name__ == "__main__":
    main(Broken)
