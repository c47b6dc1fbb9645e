"""A stand-in MCP server (stdio) that tells ``acp check`` when an agent connects to it.

The checker lists it in ``session/new``'s ``mcpServers`` as
``python mcp_probe.py PORT TOKEN``. When the agent sends MCP's ``initialize``, the probe
connects to 127.0.0.1:PORT, writes TOKEN and a newline, and answers like a server with no
tools, prompts or resources. It imports nothing outside the standard library, so it starts
fast, and it exits when its stdin ends.
"""

from __future__ import annotations

import json
import socket
import sys
from typing import Any, cast

_EMPTY_LISTS = {"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources"}


def _answer(message: dict[str, Any]) -> dict[str, Any] | None:
    method = message.get("method")
    if "id" not in message or not isinstance(method, str):
        return None  # notifications (notifications/initialized ...) and stray responses
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
    if method == "initialize":
        params = message.get("params")
        version = (
            cast("dict[str, Any]", params).get("protocolVersion")
            if isinstance(params, dict)
            else None
        )
        reply["result"] = {
            "protocolVersion": version or "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "acp-check-probe", "version": "1"},
        }
    elif method in _EMPTY_LISTS:
        reply["result"] = {_EMPTY_LISTS[method]: []}
    elif method == "ping":
        reply["result"] = {}
    else:
        reply["error"] = {"code": -32601, "message": f"Method not found: {method}"}
    return reply


def _report(port: int, token: str) -> None:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            conn.sendall(token.encode() + b"\n")
    except OSError:
        pass  # the checker is gone: nothing to tell


def main(argv: list[str]) -> int:
    port, token = int(argv[0]), argv[1]
    reported = False
    for line in sys.stdin:
        try:
            message: Any = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        message = cast("dict[str, Any]", message)
        if message.get("method") == "initialize" and not reported:
            _report(port, token)
            reported = True
        reply = _answer(message)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
