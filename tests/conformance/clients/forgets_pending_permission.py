"""Defect: answers a permission request with what its user chose, even after it cancelled the turn (CANCEL-002)."""

from __future__ import annotations

import time
from typing import Any

from _client import Client, main

FAILS = {"permission-cancel": ("CANCEL-002",)}


class Broken(Client):
    def serve(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        if method != "session/request_permission":
            super().serve(rid, method, params)
            return
        answer = self.permission(params)
        time.sleep(2.0)  # the user takes a while; the answer is not revised at the cancel
        self.answer(rid, answer)


if __name__ == "__main__":
    main(Broken)
