"""Defect: refuses to write a file that does not exist yet (FS-003)."""

from __future__ import annotations

import os
from typing import Any

from _client import Client, Refused, main

FAILS = {"fs-write-creates": ("FS-003",)}


class Broken(Client):
    def write_file(self, params: dict[str, Any]) -> dict[str, Any]:
        if not os.path.exists(self.file_path(params.get("path"))):
            raise Refused(-32002, "no such file")
        return super().write_file(params)


if __name__ == "__main__":
    main(Broken)
