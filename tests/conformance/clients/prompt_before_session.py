"""Defect: sends its prompt before session/new is answered (PROMPT-001)."""

from __future__ import annotations

import queue
from typing import Any

from _client import Client, main

FAILS = {"client-order": ("PROMPT-001",)}
ALSO = ["slow-initialize"]  # its session/new answer waits: the early prompt shows surely


class Broken(Client):
    def open_session(self) -> Any:
        self.prompted: queue.Queue[Any] = queue.Queue()
        self.pending[700] = self.prompted
        return self.call("session/new", {"cwd": self.cwd, "mcpServers": []}, before=self.early)

    def early(self) -> None:
        params = {"sessionId": "not-known-yet", "prompt": [{"type": "text", "text": self.prompt}]}
        self.write({"id": 700, "method": "session/prompt", "params": params})

    def send_prompt(self) -> Any:
        return self.prompted.get()


if __name__ == "__main__":
    main(Broken)
