"""Defect: kills a terminal's command by its pid alone, so what the command started keeps
running, after terminal/kill and when the client ends (CLIENT-014, CLIENT-011)."""

from __future__ import annotations

import subprocess

from _client import Client, main

FAILS = {"terminal-kill": ("CLIENT-014",), "terminal-orphan": ("CLIENT-011",)}


class Broken(Client):
    def kill(self, process: subprocess.Popen[bytes]) -> None:
        process.kill()


if __name__ == "__main__":
    main(Broken)
