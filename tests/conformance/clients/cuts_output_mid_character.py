"""Defect: truncates a terminal's output at a byte, not at a character (TERM-003)."""

from __future__ import annotations

import subprocess

from _client import Client, Terminal, main

FAILS = {"terminal-output-limit": ("TERM-003",)}


class Broken(Client):
    def make_terminal(self, process: subprocess.Popen[bytes], limit: int | None) -> Terminal:
        return ByteTerminal(process, limit)


class ByteTerminal(Terminal):
    truncate_at_characters = False


if __name__ == "__main__":
    main(Broken)
