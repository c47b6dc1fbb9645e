"""The client role, high tier: :func:`open_agent` starts an agent (or reaches one at a
URL), connects a :class:`~acpwire.client.toolkit_client.ToolkitClient` to it and
initializes it, and tells what went wrong when that fails (:class:`AgentStartError`,
:class:`AgentExitedError`, :class:`AgentNotFoundError`).

The client itself, what it serves and the session state it keeps, is documented in
:mod:`acpwire.client.toolkit_client`; both are importable from here. Once the transport
exists, leaving :func:`open_agent` (or failing to initialize) closes the client, which
stops a spawned agent (stdin closed, then terminate, then kill) or closes the remote
connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence

from .._waits import within
from ..protocol.errors import AcpError, ConnectionClosedError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE
from ..transports.base import Transport
from ..transports.remote import Reconnected
from ..transports.subprocess import AgentNotFoundError, SubprocessTransport, spawn
from .toolkit_client import ToolkitClient

__all__ = [
    "AgentExitedError",
    "AgentNotFoundError",
    "AgentStartError",
    "ToolkitClient",
    "open_agent",
]

STDERR_TAIL_LINES = 20
"""Lines of a failed agent's stderr quoted in the error: enough for a traceback's end."""


class AgentStartError(AcpError):
    """The agent process started but could not be initialized."""


class AgentExitedError(AgentStartError):
    """The agent exited (or closed its output) before answering ``initialize``.

    ``returncode`` is its exit status (negative: killed by that signal) and
    ``stderr_tail`` the last lines it wrote to stderr.
    """

    def __init__(self, message: str, *, returncode: int | None, stderr_tail: str) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr_tail = stderr_tail


@contextlib.asynccontextmanager
async def open_agent(
    command: Sequence[str] | str | None = None,
    *,
    client: ToolkitClient | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    initialize_timeout: float | None = 60.0,
    on_stderr: Callable[[str], None] | None = None,
    grace_period: float = 2.0,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    on_stray_output: Callable[[str], None] | None = None,
    url: str | None = None,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    http: bool = False,
    reconnect: bool = True,
    on_reconnect: Callable[[Reconnected], None] | None = None,
) -> AsyncGenerator[ToolkitClient, None]:
    """Spawn the agent ``command`` (an argv list), or connect to the remote agent at
    ``url``; connect ``client`` and initialize it.

    Yields the client (a new :class:`ToolkitClient` when none is given), with
    ``client.agent`` ready. On exit the client's terminals are released and the agent
    is stopped (stdin closed, then terminate, then kill) or the remote connection closed.

    Remote agents (``url``: ``ws(s)://`` or ``http(s)://``, as ``acp serve`` prints):
    WebSocket by default, Streamable HTTP with ``http=True`` (HTTP/2, or HTTP/1.1
    when the server has no HTTP/2); ``token`` is sent as ``Authorization: Bearer``,
    ``headers`` on every request. With ``reconnect`` (the default) a broken connection
    is restored and the open sessions re-attached under the same ids
    (:mod:`acpwire.transports.remote`): requests in flight then fail with
    :class:`~acpwire.protocol.errors.ConnectionLost`, and ``on_reconnect`` (and
    :meth:`ToolkitClient.reconnected`) hears about it.

    ``on_stderr`` gets the agent's stderr line by line; ``on_stray_output`` the lines of
    its stdout that are not JSON (a login prompt some agents print), which otherwise
    reach the connection as malformed messages. A message over ``max_message_size``
    bytes is dropped (and logged); the rest of the stream goes on.

    Raises :class:`AgentNotFoundError` when the command cannot be started,
    :class:`AgentExitedError` (with the agent's stderr tail) when it exits before
    answering ``initialize``, :class:`AgentStartError` when it does not answer within
    ``initialize_timeout`` seconds,
    :class:`~acpwire.protocol.errors.ConnectionClosedError` when ``url`` cannot be
    reached (or refuses the token: HTTP 401/403, at once),
    :class:`~acpwire.protocol.errors.RequestError` when the agent answers
    ``initialize`` with an error, and
    :class:`~acpwire.protocol.errors.VersionMismatchError` when it answers with a
    protocol version this library cannot speak (the agent is stopped first, INIT-010).
    """
    if (command is None) == (url is None):
        raise ValueError("open_agent needs either a command or url=")
    client = client if client is not None else ToolkitClient()
    transport: Transport
    if url is not None:
        name = f"the agent at {url}"
        transport = await _connect_remote(
            client, url, token, headers, http, reconnect, on_reconnect
        )
    else:
        assert command is not None
        argv = [command] if isinstance(command, str) else list(command)
        if not argv:
            raise ValueError("open_agent needs a command")
        name = f"agent {argv[0]!r}"
        transport = await spawn(
            argv[0],
            argv[1:],
            env=env,
            cwd=cwd,
            on_stderr=on_stderr,
            grace_period=grace_period,
            max_message_size=max_message_size,
            on_stray_output=on_stray_output,
        )
    client.connect(transport)
    try:
        await _initialize(client, transport, name, initialize_timeout)
        yield client
    finally:
        await client.close()


async def _connect_remote(
    client: ToolkitClient,
    url: str,
    token: str | None,
    headers: Mapping[str, str] | None,
    http: bool,
    reconnect: bool,
    on_reconnect: Callable[[Reconnected], None] | None,
) -> Transport:
    """The transport to the remote agent at ``url``; reconnects reach
    ``client.reconnected`` and then ``on_reconnect``."""
    from ..transports.remote import connect_remote

    def reconnected(event: Reconnected) -> None:
        client.reconnected(event)
        if on_reconnect is not None:
            on_reconnect(event)

    return await connect_remote(
        url,
        token=token,
        headers=headers,
        kind="http" if http else "websocket",
        http2=None,
        reconnect=reconnect,
        on_reconnect=reconnected,
    )


async def _initialize(
    client: ToolkitClient, transport: Transport, name: str, timeout: float | None
) -> None:
    """``client.initialize()`` within ``timeout``; when it fails, the client is closed
    first (a spawned agent's stderr is then complete) and the error says what the agent
    did."""
    spawned = transport if isinstance(transport, SubprocessTransport) else None
    try:
        await within(client.initialize(), timeout)
    except ConnectionClosedError:
        if spawned is None:
            raise
        await client.close()
        message = f"{name} {spawned.ended('initialize')}"
        tail = _tail(spawned.stderr_tail())
        raise AgentExitedError(message, returncode=spawned.returncode, stderr_tail=tail) from None
    except asyncio.TimeoutError:
        await client.close()
        tail = "" if spawned is None else _tail(spawned.stderr_tail())
        message = f"{name} did not answer initialize within {timeout} s"
        raise AgentStartError(message + (f"; last stderr lines:\n{tail}" if tail else "")) from None


def _tail(text: str, lines: int = STDERR_TAIL_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])
