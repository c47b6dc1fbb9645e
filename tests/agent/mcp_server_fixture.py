"""A small MCP server for the tests of ``acpwire.agent.mcp``, built on the official SDK.

    python mcp_server_fixture.py                       # stdio
    python mcp_server_fixture.py http [HEADER=VALUE]   # streamable HTTP on 127.0.0.1

In HTTP mode it binds a free port, prints ``PORT <n>`` on stdout once the
socket listens, then serves ``/mcp``; with ``HEADER=VALUE`` every request
lacking that header is answered 401.
"""

from __future__ import annotations

import os
import socket
import sys
from typing import Any

try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as _Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as _Server  # type: ignore[no-redef,attr-defined,unused-ignore]

server = _Server("fixture")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("this tool always fails")


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool()
def getenv(name: str) -> str:
    """The value of an environment variable ('' if unset)."""
    return os.environ.get(name, "")


@server.tool()
def cwd() -> str:
    """The server's working directory."""
    return os.getcwd()


def _require_header(app: Any, name: str, value: str) -> Any:
    wanted = (name.lower().encode(), value.encode())

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and wanted not in list(scope.get("headers", [])):
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"missing header"})
            return
        await app(scope, receive, send)

    return guarded


def _serve_http(required: str | None) -> None:
    import anyio
    import uvicorn

    app: Any = server.streamable_http_app()
    if required:
        name, _, value = required.partition("=")
        app = _require_header(app, name, value)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    if os.environ.get("FIXTURE_STDERR_NOISE"):
        print(os.environ["FIXTURE_STDERR_NOISE"], file=sys.stderr, flush=True)
    if len(sys.argv) > 1 and sys.argv[1] == "http":
        _serve_http(sys.argv[2] if len(sys.argv) > 2 else None)
    else:
        server.run()
