"""Defect: checks the path as written, not where its links lead (SANDBOX-003)."""

from __future__ import annotations

import os
from typing import Any

from _client import Client, main

FAILS = {"fs-symlink-out": ("SANDBOX-003",)}


class Broken(Client):
    def file_path(self, path: Any) -> str:
        if isinstance(path, str) and os.path.isabs(path):
            plain = os.path.abspath(path)
            if plain.startswith(self.root + os.sep):
                return plain
        return super().file_path(path)


if __name__ == "__main__":
    main(Broken)
