"""``acp serve``: expose a stdio agent (or the demo agent) on a remote ``/acp`` endpoint.

``acp serve [--host 127.0.0.1] [--port 8000] -- AGENT_COMMAND ARGS...`` spawns
one agent process per remote connection (WebSocket or Streamable HTTP) and
copies messages both ways; ``acp serve --demo`` serves the built-in demo agent
in-process. The chosen address is printed to stderr once the server listens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import logging
import os
import shutil
import sys
from collections.abc import Sequence

__all__ = ["add_arguments", "run"]

INSTALL_HINT = "acp serve needs the remote extra: pip install 'acpwire[remote]'"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=int, default=8000, help="port (default: 8000; 0: any free port)"
    )
    parser.add_argument("--path", default="/acp", help="endpoint path (default: /acp)")
    parser.add_argument("--demo", action="store_true", help="serve the built-in demo agent")
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=1800.0,
        help="close a connection after this many seconds without messages (0: never)",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log connections and agent stderr"
    )
    parser.add_argument("agent", nargs=argparse.REMAINDER, help="-- AGENT_COMMAND ARGS...")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    agent = list(args.agent)
    if agent and agent[0] == "--":
        agent = agent[1:]
    if args.demo == bool(agent):
        parser.error("acp serve: give either --demo or -- AGENT_COMMAND ARGS...")
    missing = [m for m in ("uvicorn", "websockets") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"acp: {INSTALL_HINT} (missing: {', '.join(missing)})", file=sys.stderr)
        return 1
    if agent:
        command = agent[0]
        if (shutil.which(command) if os.sep not in command else command) is None:
            print(f"acp serve: agent command not found: {command!r}", file=sys.stderr)
            return 3
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="acp serve: %(message)s",
    )
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(_serve(args, agent))
    return 130


async def _serve(args: argparse.Namespace, agent: Sequence[str]) -> int:
    from ..server import StdioBridge, asgi_app
    from ..server.runner import bind, serve, url_of

    store = None
    if args.demo:
        from ..demo import build_app

        store = build_app()
        app = asgi_app(store, path=args.path, idle_timeout=args.idle_timeout or None)
    else:
        bridge = StdioBridge(agent[0], agent[1:])
        app = asgi_app(bridge, path=args.path, idle_timeout=args.idle_timeout or None)
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        print(f"acp serve: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    url = url_of(sock, args.path)
    print(
        f"acp serve: listening on {url} (WebSocket: ws://{url.removeprefix('http://')})",
        file=sys.stderr,
        flush=True,
    )
    try:
        await serve(app, sock)
    finally:
        await app.aclose()
        if store is not None:
            await store.aclose()
        sock.close()
    return 0
