"""Defect: Refuses session/new when it lists an MCP server (SESS-024)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, RpcError, main

FAILS = {"mcp-servers": ("SESS-024",)}


class Broken(Agent):
    def on_session_new(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("mcpServers"):
            raise RpcError(-32602, "MCP servers are not supported")
        return super().on_session_new(params)


if __name__ == "__main__":
    main(Broken)
