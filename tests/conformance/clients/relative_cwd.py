"""Defect: opens its session with the relative cwd "." (SESS-019, OVR-001)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-paths": ("SESS-019", "OVR-001")}


class Broken(Client):
    def open_session(self) -> Any:
        return self.call("session/new", {"cwd": ".", "mcpServers": []})


if __name__ == "__main__":
    main(Broken)
