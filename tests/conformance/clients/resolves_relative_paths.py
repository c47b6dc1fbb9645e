"""Defect: reads a relative path from its own folder (SANDBOX-004)."""

from __future__ import annotations

import os
from typing import Any

from _client import Client, main

FAILS = {"fs-relative": ("SANDBOX-004",)}


class Broken(Client):
    def file_path(self, path: Any) -> str:
        if isinstance(path, str) and not os.path.isabs(path):
            path = os.path.join(self.cwd, path)
        return super().file_path(path)


if __name__ == "__main__":
    main(Broken)
