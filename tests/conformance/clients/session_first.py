"""Defect: sends session/new before initialize (INIT-001)."""

from __future__ import annotations

import queue
from typing import Any

from _client import Client, main

FAILS = {"client-order": ("INIT-001",)}


class Broken(Client):
    def handshake(self) -> int | None:
        waiting: queue.Queue[Any] = queue.Queue()
        self.pending[500] = waiting
        new = {"cwd": self.cwd, "mcpServers": []}
        self.write({"id": 500, "method": "session/new", "params": new})
        status = self.failed(self.call("initialize", self.initialize_params()), "initialize")
        if status is not None:
            return status
        answer = waiting.get()
        status = self.failed(answer, "session/new")
        if status is not None:
            return status
        self.session = answer["result"]["sessionId"]
        return None


if __name__ == "__main__":
    main(Broken)
