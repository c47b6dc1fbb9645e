"""Defect: Sends a second permission request with the id of one still unanswered (RPC-012)."""

from __future__ import annotations

import json
import queue
from typing import Any

from _agent import Agent, main

FAILS = {"agent-request-ids": ("RPC-012",)}


class Broken(Agent):
    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method != "session/request_permission":
            return super().call(method, params)
        request_id = self.next_request_id()
        box: queue.Queue[dict[str, Any]] = queue.Queue()
        self.pending[request_id] = box
        request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        line = json.dumps(request)
        self.write_line(line + "\n" + line)  # twice in one write: the first is still open
        answer = box.get(timeout=20)
        box.get(timeout=20)
        self.pending.pop(request_id, None)
        return answer


if __name__ == "__main__":
    main(Broken)
