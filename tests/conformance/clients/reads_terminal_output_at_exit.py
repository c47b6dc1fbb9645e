"""Defect: reads a terminal's output only after it exited: a flood blocks the command (CLIENT-006)."""

from __future__ import annotations

import subprocess
import threading
from typing import Any

from _client import Client, Terminal, main

FAILS = {"terminal-flood": ("CLIENT-006",)}


class Broken(Client):
    def make_terminal(self, process: subprocess.Popen[bytes], limit: int | None) -> Terminal:
        return LateTerminal(process, limit)


class LateTerminal(Terminal):
    def __init__(self, process: subprocess.Popen[bytes], limit: int | None) -> None:
        self.process = process
        self.limit = limit
        self.output = bytearray()
        self.truncated = False
        self.reader = threading.Thread(target=self.read, daemon=True)

    def wait(self) -> dict[str, Any]:
        self.process.wait()
        if self.reader.ident is None:
            self.reader.start()
        return super().wait()


if __name__ == "__main__":
    main(Broken)
