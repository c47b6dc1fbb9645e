"""Defect: adds a field of its own at the root of initialize's params (EXT-002)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-custom-fields": ("EXT-002",)}


class Broken(Client):
    def initialize_params(self) -> dict[str, Any]:
        return {**super().initialize_params(), "corpusDebug": True}


if __name__ == "__main__":
    main(Broken)
