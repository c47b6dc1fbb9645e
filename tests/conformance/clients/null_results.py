"""Defect: answers fs/write_text_file with a null result (TRANS-005)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-schema": ("TRANS-005",)}
ALSO = ["fs-write-creates"]


class Broken(Client):
    def write_file(self, params: dict[str, Any]) -> Any:
        super().write_file(params)
        return None


if __name__ == "__main__":
    main(Broken)
