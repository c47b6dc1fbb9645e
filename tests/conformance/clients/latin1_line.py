"""Defect: writes a line in Latin-1, not UTF-8 (TRANS-001)."""

from __future__ import annotations

import json
from typing import Any

from _client import Client, main

FAILS = {"client-stdin-clean": ("TRANS-001",)}


class Broken(Client):
    def encode(self, message: dict[str, Any]) -> bytes:
        data = super().encode(message)
        if message.get("method") == "initialize":
            note = {"jsonrpc": "2.0", "method": "_corpus/note", "params": {"text": "\u00e9t\u00e9"}}
            data += json.dumps(note, ensure_ascii=False).encode("latin-1") + b"\n"
        return data


if __name__ == "__main__":
    main(Broken)
