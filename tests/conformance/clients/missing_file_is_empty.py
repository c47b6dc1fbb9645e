"""Defect: answers a read of a missing file with empty content (CLIENT-010)."""

from __future__ import annotations

import os
from typing import Any

from _client import Client, main

FAILS = {"fs-missing": ("CLIENT-010",)}


class Broken(Client):
    def read_file(self, params: dict[str, Any]) -> dict[str, Any]:
        if not os.path.exists(self.file_path(params.get("path"))):
            return {"content": ""}
        return super().read_file(params)


if __name__ == "__main__":
    main(Broken)
