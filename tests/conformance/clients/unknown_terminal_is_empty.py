"""Defect: answers output of a terminal it does not have with empty output (CLIENT-012)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"terminal-unknown-id": ("CLIENT-012",)}


class Broken(Client):
    def terminal_output(self, params: dict[str, Any]) -> dict[str, Any]:
        if str(params.get("terminalId")) not in self.terminals:
            return {"output": "", "truncated": False}
        return super().terminal_output(params)


if __name__ == "__main__":
    main(Broken)
