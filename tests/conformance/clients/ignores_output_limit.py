"""Defect: keeps a terminal's whole output, whatever outputByteLimit says (CLIENT-009)."""

from __future__ import annotations

import subprocess

from _client import Client, Terminal, main

FAILS = {"terminal-output-limit": ("CLIENT-009",)}


class Broken(Client):
    def make_terminal(self, process: subprocess.Popen[bytes], limit: int | None) -> Terminal:
        return Terminal(process, None)


if __name__ == "__main__":
    main(Broken)
