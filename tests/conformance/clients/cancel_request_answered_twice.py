"""Defect: answers -32800 to every $/cancel_request, whether it answered already or not (RCANCEL-001)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-cancel-request": ("RCANCEL-001",)}


class Broken(Client):
    def notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "$/cancel_request":
            self.answer_error(params.get("requestId"), -32800, "request cancelled")
        super().notification(method, params)


if __name__ == "__main__":
    main(Broken)
