"""Client side of MCP over ACP (unstable): offer MCP servers to the agent through
the ACP connection itself, with no process or port of their own.

::

    class MyClient(Client):
        unstable = True                      # MCP over ACP is unstable ACP

    conn = ClientSideConnection(MyClient(), transport)
    await conn.initialize()                  # the agent must advertise mcpCapabilities.acp
    tools = conn.agent.offer_mcp_server("project-tools", my_mcp_server)
    await conn.agent.new_session(cwd, [tools])

``my_mcp_server`` is an official ``mcp`` SDK server (``MCPServer`` or a low-level
``Server``; ``pip install 'acpwire[mcp]'``), served through the SDK's own request
pipeline for MCP 2026-07-28, or any :data:`McpHandler`. The wire rules are in
:mod:`acpwire.protocol.mcp_binding`.

Limits and failures: an offered server runs at most ``max_active`` requests at
once (``-33000`` past that); a request id already active is ``-32602``; an
unknown or withdrawn server is ``-33001``; a handler that raises anything but
:class:`~acpwire.protocol.mcp_binding.McpProtocolError` is ``-33002`` (logged
here, its text never sent). Cancelling the outer request (``$/cancel_request``)
or withdrawing the server cancels the handler. Notifications a handler sends
after its request is answered are dropped.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from .. import schema as s
from ..protocol.errors import InvalidParams, RequestCancelled
from ..protocol.mcp_binding import (
    BACKEND_FAILED,
    RESOURCE_LIMIT_EXCEEDED,
    McpProtocolError,
    binding_error,
    check_envelope,
)
from ..schema import none_to_unset

__all__ = [
    "DEFAULT_MAX_ACTIVE",
    "McpCall",
    "McpHandler",
    "McpNotifier",
    "McpOffers",
    "mcp_sdk_handler",
]

log = logging.getLogger("acpwire.client.mcp")

DEFAULT_MAX_ACTIVE = 64
"""MCP requests one offered server runs at once (as the TypeScript SDK's default)."""


class McpNotifier(Protocol):
    """Where the MCP notifications of an offered server's requests go: the connection's
    agent peer (:meth:`~acpwire.client.v1.AgentPeer.mcp_message`)."""

    async def mcp_message(
        self,
        server_id: str,
        request_id: str,
        method: str,
        params: dict[str, Any] | None = None,
    ) -> None: ...


@dataclass
class McpCall:
    """One inner MCP request for a server this client offers."""

    server_id: str
    request_id: str
    method: str
    params: dict[str, Any] | None
    """The inner params, ``_meta`` envelope included (``None`` when there are none)."""
    meta: dict[str, Any] | None
    """The outer ``mcp/message`` ``_meta`` (ACP's, not MCP's)."""
    _peer: McpNotifier = field(repr=False)
    _done: bool = field(default=False, repr=False)

    def finish(self) -> None:
        """Mark the request answered: from now on :meth:`notify` drops what it is given."""
        self._done = True

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send an MCP notification that belongs to this request (progress, ...).
        Dropped once the request is answered."""
        if self._done:
            log.debug("dropped %s for finished MCP request %s", method, self.request_id)
            return
        await self._peer.mcp_message(
            self.server_id, self.request_id, method, None if params is None else dict(params)
        )


McpHandler = Callable[[McpCall], Awaitable[Any]]
"""Serves one MCP request: returns the MCP result (any JSON value) or raises
:class:`~acpwire.protocol.mcp_binding.McpProtocolError` for an MCP error."""


@dataclass
class _Offered:
    name: str
    handler: McpHandler
    max_active: int
    active: dict[str, asyncio.Future[Any]] = field(default_factory=dict[str, "asyncio.Future[Any]"])


class McpOffers:
    """The MCP servers one client offers on one ACP connection, by ``serverId``."""

    def __init__(self, peer: McpNotifier) -> None:
        self._peer = peer
        self._servers: dict[str, _Offered] = {}
        self._used: set[str] = set()

    def __contains__(self, server_id: object) -> bool:
        return server_id in self._servers

    def offer(
        self,
        name: str,
        server: McpHandler | Any,
        *,
        server_id: str | None = None,
        max_active: int = DEFAULT_MAX_ACTIVE,
    ) -> s.McpServerAcp:
        """Start serving ``server``; the declaration goes in ``mcpServers``.

        A ``serverId`` is used once per connection, even after it is withdrawn.
        """
        if max_active < 1:
            raise ValueError("max_active must be at least 1")
        sid = server_id or f"{name}:{uuid.uuid4().hex}"
        if sid in self._used:
            raise ValueError(f"MCP server id {sid!r} was already offered on this connection")
        handler = server if _is_handler(server) else mcp_sdk_handler(server)
        self._used.add(sid)
        self._servers[sid] = _Offered(name, handler, max_active)
        return s.McpServerAcp(name=name, server_id=sid)

    def withdraw(self, server_id: str) -> None:
        """Stop serving a server: its running requests are cancelled (answered
        ``-32800``) and later ones get ``-33001``."""
        offered = self._servers.pop(server_id, None)
        if offered is not None:
            for running in offered.active.values():
                running.cancel()

    async def serve(self, params: s.MessageMcpRequest) -> s.MessageMcpResponse | None:
        """Answer an ``mcp/message`` request, or None if no offered server has its id."""
        offered = self._servers.get(params.server_id)
        if offered is None:
            return None
        rid = params.request_id
        if rid in offered.active:
            raise InvalidParams(
                "duplicate active MCP request ID", {"serverId": params.server_id, "requestId": rid}
            )
        if len(offered.active) >= offered.max_active:
            raise binding_error(
                RESOURCE_LIMIT_EXCEEDED,
                "MCP-over-ACP active request limit exceeded",
                {"serverId": params.server_id},
            )
        inner = None if params.params is None or params.params is s.UNSET else params.params
        problem = check_envelope(inner)
        if problem is not None:
            return _error(problem)
        meta = None if params.meta is None or params.meta is s.UNSET else params.meta
        call = McpCall(params.server_id, rid, params.method, inner, meta, self._peer)
        running = asyncio.ensure_future(offered.handler(call))
        offered.active[rid] = running
        try:
            result = await asyncio.shield(running)
        except McpProtocolError as exc:
            return _error(exc)
        except asyncio.CancelledError:
            # The shield keeps a cancellation of this request (the peer's
            # $/cancel_request) away from the handler until `finally`: a handler
            # already cancelled here was withdrawn.
            if running.cancelled():
                raise RequestCancelled() from None
            raise
        except Exception:
            log.exception("MCP server %r failed on %s", offered.name, params.method)
            raise binding_error(BACKEND_FAILED, "MCP server handler failed") from None
        finally:
            call.finish()
            offered.active.pop(rid, None)
            running.cancel()
        return s.MessageMcpResponse(result=result)


def _error(problem: McpProtocolError) -> s.MessageMcpResponse:
    return s.MessageMcpResponse(
        error=s.McpError(
            code=problem.code,
            message=problem.message,
            data=none_to_unset(problem.data),
        )
    )


def _is_handler(server: object) -> bool:
    """Whether ``server`` is a plain coroutine function handler rather than an SDK server."""
    return (
        callable(server)
        and not hasattr(server, "_lowlevel_server")
        and not hasattr(server, "request_handlers")
    )


def mcp_sdk_handler(server: Any) -> McpHandler:
    """Serve an official ``mcp`` SDK server (``MCPServer`` or low-level ``Server``)
    one request at a time through the SDK's MCP 2026-07-28 pipeline.

    Each request runs inside the server's lifespan, as the SDK's single-exchange
    HTTP entry runs it: discovery, tools, resources and prompts behave as they do
    there; progress goes back as ``mcp/message`` notifications.
    """
    try:
        from mcp.server.runner import modern_on_request
        from mcp.shared.exceptions import MCPError
        from pydantic import ValidationError
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "serving an MCP SDK server over ACP needs the official MCP Python SDK; "
            "install it with: pip install 'acpwire[mcp]'"
        ) from exc
    # MCPServer wraps a low-level Server, which is what the SDK's runner serves
    # (the SDK's own in-process client reaches it the same way).
    lowlevel: Any = getattr(server, "_lowlevel_server", server)

    async def handle(call: McpCall) -> Any:
        async with lowlevel.lifespan(lowlevel) as state:
            on_request = modern_on_request(lowlevel, state)
            try:
                return await on_request(_CallContext(call), call.method, call.params)
            except MCPError as exc:
                raise McpProtocolError(exc.code, exc.message, exc.data) from None
            except ValidationError:
                raise McpProtocolError(-32602, "Invalid request parameters") from None

    return handle


class _CallContext:
    """The ``mcp`` SDK's per-request dispatch context, for one :class:`McpCall`.

    MCP 2026-07-28 servers send no requests to the client; notifications and
    progress travel back as ``mcp/message`` notifications of this request.
    """

    def __init__(self, call: McpCall) -> None:
        from mcp.shared.transport_context import TransportContext

        self._call = call
        self.transport = TransportContext(kind="acp", can_send_request=False)
        self.message_metadata = None
        self.cancel_requested = _anyio_event()

    @property
    def can_send_request(self) -> bool:
        return False

    @property
    def request_id(self) -> str:
        return self._call.request_id

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: Any = None
    ) -> dict[str, Any]:
        from mcp.shared.exceptions import NoBackChannelError

        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: Any = None) -> None:
        await self._call.notify(method, params)

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        meta = (self._call.params or {}).get("_meta")
        token = (
            cast("dict[str, Any]", meta).get("progressToken") if isinstance(meta, dict) else None
        )
        if isinstance(token, (str, int)) and not isinstance(token, bool):
            body: dict[str, Any] = {"progressToken": token, "progress": progress}
            if total is not None:
                body["total"] = total
            if message is not None:
                body["message"] = message
            await self._call.notify("notifications/progress", body)


def _anyio_event() -> Any:
    import anyio

    return anyio.Event()
