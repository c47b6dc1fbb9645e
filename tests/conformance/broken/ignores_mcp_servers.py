"""Defect: Never connects to the MCP servers it is given (SESS-027)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, Session, main

FAILS = {"mcp-connect": ("SESS-027",)}


class Broken(Agent):
    def connect_mcp(self, session: Session, servers: list[Any]) -> None:
        pass


if __name__ == "__main__":
    main(Broken)
