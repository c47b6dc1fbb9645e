"""Defect: sends session/new without waiting for initialize's answer (SESS-001)."""

from __future__ import annotations

from _client import Client, main

FAILS = {"client-order": ("SESS-001",)}
ALSO = ["slow-initialize"]  # its initialize answer waits: the early session/new shows surely


class Broken(Client):
    def handshake(self) -> int | None:
        self.write({"id": 100, "method": "initialize", "params": self.initialize_params()})
        answer = self.open_session()
        status = self.failed(answer, "session/new")
        if status is not None:
            return status
        self.session = answer["result"]["sessionId"]
        return None


if __name__ == "__main__":
    main(Broken)
