"""Defect: sends a response to a request the agent never made (RPC-003)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-responses": ("RPC-003",)}


class Broken(Client):
    def open_session(self) -> Any:
        self.write({"id": 424242, "result": {}})
        return super().open_session()


if __name__ == "__main__":
    main(Broken)
