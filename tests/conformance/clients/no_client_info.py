"""Defect: does not name itself in initialize (INIT-002)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-info": ("INIT-002",)}


class Broken(Client):
    def initialize_params(self) -> dict[str, Any]:
        params = super().initialize_params()
        del params["clientInfo"]
        return params


if __name__ == "__main__":
    main(Broken)
