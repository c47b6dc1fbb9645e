"""Defect: Sends session/update with "jsonrpc": "1.0" (RPC-011)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, Session, main

FAILS = {"envelope": ("RPC-011",)}


class Broken(Agent):
    def update(self, session: Session, update: dict[str, Any]) -> None:
        self.write(
            {
                "jsonrpc": "1.0",
                "method": "session/update",
                "params": {"sessionId": session.id, "update": update},
            }
        )


if __name__ == "__main__":
    main(Broken)
