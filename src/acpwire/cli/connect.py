"""``acp connect URL``: a remote agent for editors that can only spawn one.

Configure an editor's agent command as ``acp connect https://host/acp`` and it
talks ACP on this process's stdin and stdout while the messages travel to the
remote endpoint over a WebSocket (default) or Streamable HTTP (``--http``).

* Every message is forwarded unchanged, both ways; nothing else ever reaches
  stdout (logs and errors go to stderr; a stray write to fd 1 lands there too).
* The token comes from ``--token`` or ``$ACP_TOKEN`` (prefer the variable: a
  command line is visible to other users); ``--header 'Name: value'`` adds
  other headers to every request.
* When the editor closes stdin, the remote connection is closed and the
  process exits 0. When the server ends the connection for good, stdout is
  closed (the editor sees its agent exit); exit 1 if it broke and could not be
  restored.
* When the endpoint cannot be reached or refuses the token (HTTP 401/403, told at
  once over either transport), the reason goes to stderr and, as a JSON-RPC error,
  to the editor's request (its ``initialize``); then exit 1.
* A broken connection is restored (:mod:`acpwire.transports.remote`): first
  by resuming the same server connection, else by a new connection that
  replays the editor's ``initialize`` and re-attaches its sessions; requests
  that were in flight then get the error "connection lost; session re-attached".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sys
import urllib.parse
from typing import TYPE_CHECKING, Any

from .._waits import within

if TYPE_CHECKING:
    from ..transports.base import Transport

__all__ = ["add_connect_parser", "run_connect", "url_problem"]

TOKEN_ENV = "ACP_TOKEN"
INSTALL_HINT = "acp connect needs the remote extra: pip install 'acpwire[remote]'"


def add_connect_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``connect`` on the ``acp`` subparsers (argparse only)."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "connect",
        help="bridge stdio to a remote agent (for editors that spawn agents)",
        description=(
            "Speak ACP on stdin/stdout and forward every message to the remote agent at URL "
            "(as `acp serve` prints it), over WebSocket, or Streamable HTTP with --http."
        ),
        epilog="exit status: 0 stdin closed or the server ended the connection, "
        "1 the connection broke and could not be restored, 2 usage",
    )
    parser.add_argument("url", help="the endpoint, e.g. https://host:8000/acp or ws://…/acp")
    parser.add_argument(
        "--token",
        default=None,
        help=f"send 'Authorization: Bearer TOKEN' (default: ${TOKEN_ENV})",
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="add this header to every request (repeatable)",
    )
    parser.add_argument(
        "--http", action="store_true", help="use Streamable HTTP (HTTP/2 if the server has it)"
    )
    parser.add_argument(
        "--no-reconnect",
        action="store_true",
        help="exit when the connection breaks instead of restoring it",
    )
    parser.add_argument(
        "--give-up-after",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="stop trying to restore a broken connection after this long (default: 300)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    parser.set_defaults(handler=run_connect)
    return parser


def url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as a remote agent's address (``None``: nothing).

    ``acp chat --url`` and ``acp connect`` check it before connecting, so that a typo
    is one line on stderr and exit 2, not a traceback from an HTTP library.
    """
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        return f"not a valid URL: {url!r} ({exc})"
    if parts.scheme.lower() not in ("http", "https", "ws", "wss"):
        return f"not an http(s):// or ws(s):// URL: {url!r}"
    if not parts.hostname:
        return f"the URL names no host: {url!r}"
    return None


def _headers(values: list[str]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"--header takes 'NAME: VALUE', not {value!r}")
        headers[name.strip()] = content.strip()
    return headers


def run_connect(args: argparse.Namespace) -> int:
    """The ``acp connect`` command; returns the exit status."""
    import importlib.util

    missing = [m for m in ("httpx", "websockets") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"acp: {INSTALL_HINT} (missing: {', '.join(missing)})", file=sys.stderr)
        return 1
    problem = url_problem(args.url)
    if problem is not None:
        print(f"acp connect: {problem}", file=sys.stderr)
        return 2
    try:
        headers = _headers(args.header)
    except ValueError as exc:
        print(f"acp connect: {exc}", file=sys.stderr)
        return 2
    token = args.token or os.environ.get(TOKEN_ENV, "").strip() or None
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="acp connect: %(message)s",
    )
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(_bridge(args, token, headers))
    return 130


FIRST_MESSAGE_WAIT = 10.0
"""Seconds ``acp connect`` waits for the editor's first message when the endpoint cannot
be reached, to answer it with the reason (an editor sends ``initialize`` at once)."""


async def _refuse(editor: Transport, message: bytes, error: Exception) -> None:
    """Answer the editor's request ``message`` with ``error`` (a notification: nothing)."""
    from ..protocol.errors import ErrorCode
    from ..protocol.peek import NotAMessage, peek

    try:
        p = peek(message)
    except NotAMessage:
        return
    if p.kind == "request" and p.id is not None:
        answer = {"code": int(ErrorCode.INTERNAL_ERROR), "message": f"acp connect: {error}"}
        await editor.send(json.dumps({"jsonrpc": "2.0", "id": p.id, "error": answer}).encode())


async def _to_agent(editor: Transport, remote: Transport) -> None:
    """Forward the editor's messages; a request the endpoint refused (a first
    ``initialize`` that cannot be sent, a refused token) is answered with the reason."""
    from ..protocol.errors import ConnectionClosedError
    from ..protocol.framing import Oversize

    while True:
        message = await editor.receive()
        if message is None:
            return
        if isinstance(message, Oversize):
            logging.getLogger("acpwire.cli.connect").warning(
                "dropped an oversize message (%d bytes) from the editor", message.size
            )
            continue
        try:
            await remote.send(message)
        except ConnectionClosedError as exc:
            with contextlib.suppress(ConnectionClosedError, OSError):
                await _refuse(editor, message, exc)
            raise


async def _bridge(args: argparse.Namespace, token: str | None, headers: dict[str, str]) -> int:
    from ..protocol.errors import ConnectionClosedError
    from ..server.bridge import copy_messages
    from ..transports.remote import Reconnected, connect_remote
    from ..transports.stdio import stdio_transport

    editor = await stdio_transport()

    def reconnected(event: Reconnected) -> None:
        lost = f", lost {', '.join(event.lost)}" if event.lost else ""
        print(
            f"acp connect: reconnected; {len(event.reattached)} session(s) re-attached{lost}",
            file=sys.stderr,
            flush=True,
        )

    try:
        remote = await connect_remote(
            args.url,
            token=token,
            headers=headers,
            kind="http" if args.http else "websocket",
            http2=None,
            reconnect=not args.no_reconnect,
            on_reconnect=reconnected,
            give_up_after=args.give_up_after,
        )
    except ConnectionClosedError as exc:
        print(f"acp connect: {exc}", file=sys.stderr, flush=True)
        with contextlib.suppress(asyncio.TimeoutError, ConnectionClosedError, OSError):
            first = await within(editor.receive(), FIRST_MESSAGE_WAIT)
            if isinstance(first, bytes):
                await _refuse(editor, first, exc)
        await editor.close()
        return 1

    up = asyncio.ensure_future(_to_agent(editor, remote))
    down = asyncio.ensure_future(copy_messages(remote, editor, "from the agent"))
    status = 0
    try:
        await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
        for task in (up, down):
            if task.done() and not task.cancelled():
                error = task.exception()
                if isinstance(error, ConnectionClosedError) and error.broken:
                    print(f"acp connect: {error}", file=sys.stderr, flush=True)
                    status = 1
                elif error is not None and not isinstance(error, ConnectionClosedError):
                    raise error
    finally:
        for task in (up, down):
            task.cancel()
        for task in (up, down):
            with contextlib.suppress(BaseException):
                await task
        await remote.close()
        await editor.close()
    return status
