"""Defect: serves any absolute path outside its folder (SANDBOX-002)."""

from __future__ import annotations

import os
from typing import Any

from _client import Client, main

FAILS = {"fs-absolute-outside": ("SANDBOX-002",)}


class Broken(Client):
    def file_path(self, path: Any) -> str:
        if isinstance(path, str) and os.path.isabs(path) and not path.startswith(self.root):
            return path
        return super().file_path(path)


if __name__ == "__main__":
    main(Broken)
