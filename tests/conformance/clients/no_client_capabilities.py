"""Defect: leaves clientCapabilities out of initialize (INIT-013)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-initialize": ("INIT-013",)}


class Broken(Client):
    def initialize_params(self) -> dict[str, Any]:
        params = super().initialize_params()
        del params["clientCapabilities"]
        return params


if __name__ == "__main__":
    main(Broken)
