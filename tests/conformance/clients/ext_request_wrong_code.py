"""Defect: answers an unknown `_` request -32603 (EXT-004)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-ext-request-code": ("EXT-004",)}


class Broken(Client):
    def serve(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        if method.startswith("_"):
            self.answer_error(rid, -32603, "internal error")
        else:
            super().serve(rid, method, params)


if __name__ == "__main__":
    main(Broken)
