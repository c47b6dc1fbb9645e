"""Defect: answers every fs/read_text_file twice (RPC-005)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-responses": ("RPC-005",)}
ALSO = ["fs-read-lines"]


class Broken(Client):
    def serve(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        super().serve(rid, method, params)
        if method == "fs/read_text_file":
            super().serve(rid, method, params)


if __name__ == "__main__":
    main(Broken)
