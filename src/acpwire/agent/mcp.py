"""Agent side: connect to the MCP servers an ACP client passes in ``session/new``.

In ``session/new``, ``session/load`` and ``session/resume`` the client lists MCP
servers (``mcpServers``) that the agent should connect to. :class:`McpServers`
does that with the official ``mcp`` Python SDK (``pip install 'acpwire[mcp]'``)::

    async with McpServers(params.mcp_servers, capabilities=my_caps, cwd=params.cwd) as mcp:
        for tool in mcp.tools():          # McpTool(server, name, description, input_schema)
            ...
        result = await mcp.call_tool("files", "read", {"path": "a.txt"})
        result.text, result.structured, result.is_error

All servers are started concurrently. A server that cannot be started, exits,
or does not finish its handshake within ``startup_timeout`` seconds never
raises: it is recorded in :attr:`McpServers.failures` (server name -> message)
and the others stay usable. Calling a tool on such a server raises
:class:`McpServerError`.

A stdio server's stderr never reaches the agent's stdout (the ACP channel): by
default it is read line by line, logged on the ``acpwire.agent.mcp`` logger and
its tail is quoted in failure messages; pass ``errlog=`` to redirect it instead.

MCP over ACP (unstable): a server the client offers on the ACP connection itself
(``{"type": "acp", "serverId": ...}``, :mod:`acpwire.protocol.mcp_binding`) is
reached through ``client=`` (the connection's :class:`~acpwire.agent.ClientPeer`,
which must have opted in to unstable ACP, with ``mcpCapabilities.acp``
advertised). The ``mcp`` SDK's own ``ClientSession`` drives it over a dispatcher
that turns each MCP request into one ``mcp/message`` request; there is no
handshake (the SDK's ``server/discover``, or a minimal discovery when the server
does not implement it) and no process. Needs ``mcp`` >= 2.3 (MCP 2026-07-28).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import logging
import os
import threading
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, TextIO, cast

from .._closing import AcloseOnExit
from .._waits import within
from ..protocol.errors import AcpError, RequestError
from ..protocol.mcp_binding import MCP_PROTOCOL_VERSION
from ..schema import (
    UNSET,
    AgentCapabilities,
    McpCapabilities,
    McpServer,
    McpServerAcp,
    McpServerHttp,
    McpServerSse,
    McpServerStdio,
    MessageMcpNotification,
    UnknownVariant,
    unset_to_none,
)

if TYPE_CHECKING:
    from .v1 import ClientPeer

__all__ = [
    "McpServerError",
    "McpServers",
    "McpTool",
    "McpToolResult",
]

logger = logging.getLogger("acpwire.agent.mcp")

_INSTALL_HINT = "pip install 'acpwire[mcp]'"
_STDERR_TAIL_LINES = 20
_STDERR_EOF_GRACE = 1.0


class McpServerError(RuntimeError):
    """A tool call could not be made: unknown or failed server, or a protocol error."""


@dataclass(frozen=True)
class McpTool:
    """A tool offered by one of the session's MCP servers."""

    server: str
    name: str
    description: str | None
    input_schema: dict[str, Any]
    title: str | None = None
    output_schema: dict[str, Any] | None = None


@dataclass(frozen=True)
class McpToolResult:
    """The outcome of ``tools/call``.

    ``text`` joins the text content blocks with newlines; ``content`` holds
    every content block as JSON (wire names), for images, resources, etc.
    ``is_error`` is the tool's own error flag (the tool ran and failed).
    """

    text: str
    structured: Any = None
    is_error: bool = False
    content: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])


def _import_sdk() -> ModuleType:
    try:
        import mcp
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"acpwire.agent.mcp needs the official MCP Python SDK; install it with: {_INSTALL_HINT}"
        ) from exc
    return mcp


def _attr(obj: Any, snake: str, camel: str, default: Any = None) -> Any:
    """Read a field of an SDK model: snake_case in mcp 2, camelCase in mcp 1."""
    if hasattr(obj, snake):
        return getattr(obj, snake)
    return getattr(obj, camel, default)


def _describe(exc: BaseException) -> str:
    """A one-line description, looking through exception groups to their leaves."""
    inner: object = getattr(exc, "exceptions", None)
    if isinstance(inner, tuple) and inner:
        # An exception group (the builtin one or a backport): its members are exceptions.
        leaves = cast("tuple[BaseException, ...]", inner)
        return "; ".join(_describe(e) for e in leaves)
    text = str(exc)
    if isinstance(exc, FileNotFoundError) and exc.filename:
        text = f"command not found: {exc.filename}"
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


class _StderrCapture:
    """Reads a child's stderr through a pipe on a daemon thread: logs it, keeps its tail."""

    def __init__(self, server: str, loop: asyncio.AbstractEventLoop) -> None:
        self.server = server
        self.tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL_LINES)
        self._eof: asyncio.Future[None] = loop.create_future()
        self._loop = loop
        read_fd, write_fd = os.pipe()
        self.writer: TextIO | None = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._reader = os.fdopen(read_fd, "rb")
        threading.Thread(target=self._pump, name=f"mcp-stderr-{server}", daemon=True).start()

    def _pump(self) -> None:
        try:
            with self._reader:
                for raw in self._reader:
                    line = raw.decode("utf-8", "replace").rstrip("\r\n")
                    self.tail.append(line)
                    logger.debug("MCP server %r stderr: %s", self.server, line)
        except (OSError, ValueError):  # pragma: no cover - closed under us
            pass
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is closed
                self._loop.call_soon_threadsafe(self._set_eof)

    def _set_eof(self) -> None:
        if not self._eof.done():
            self._eof.set_result(None)

    def close_writer(self) -> None:
        """Drop our copy of the write end (the child keeps its own)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    async def text(self, *, wait: bool = True) -> str:
        """The stderr tail; with ``wait``, once the child closed it (or after a short grace)."""
        self.close_writer()
        if wait:
            with contextlib.suppress(asyncio.TimeoutError):
                await within(asyncio.shield(self._eof), _STDERR_EOF_GRACE)
        return "\n".join(line for line in self.tail if line.strip())


@dataclass
class _Conn:
    name: str
    config: McpServerStdio | McpServerHttp | McpServerSse | McpServerAcp
    scope: Any = None  # anyio.CancelScope the runner enters
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    session: Any = None
    tools: list[McpTool] = field(default_factory=list[McpTool])
    error: str | None = None
    stderr: _StderrCapture | None = None
    http_error: str | None = None  # last non-2xx HTTP status seen (HTTP servers)


_TRANSPORT_GATES: tuple[tuple[type[McpServer], str, str], ...] = (
    (McpServerHttp, "http", "HTTP MCP servers"),
    (McpServerSse, "sse", "SSE MCP servers"),
    (McpServerAcp, "acp", "MCP servers over ACP"),
)
"""The transports an agent must advertise (``mcpCapabilities`` flag) before it is given them."""


class McpServers(AcloseOnExit):
    """The MCP servers of one ACP session, connected with the official ``mcp`` SDK.

    ``servers`` are the ``mcpServers`` of ``session/new`` (``McpServerStdio``,
    ``McpServerHttp``, ``McpServerSse``, and ``McpServerAcp`` given ``client``;
    anything else is recorded as a failure). ``capabilities`` are the agent's
    own (``AgentCapabilities`` or its ``McpCapabilities``): HTTP, SSE and ACP
    servers are refused unless the agent advertised them; ``None`` accepts
    every transport this class supports.

    Stdio servers run in ``cwd`` (default: the agent's own) with ``env`` from
    the client laid over the agent's environment (``inherit_env=True``) or over
    the SDK's minimal default environment (``inherit_env=False``).
    """

    def __init__(
        self,
        servers: Sequence[McpServer],
        *,
        capabilities: AgentCapabilities | McpCapabilities | None = None,
        startup_timeout: float = 15.0,
        cwd: str | os.PathLike[str] | None = None,
        inherit_env: bool = True,
        errlog: TextIO | None = None,
        client_name: str = "acpwire",
        client_version: str = "0",
        client: ClientPeer | None = None,
    ) -> None:
        self._servers = list(servers)
        self._client = client
        self._mcp_caps = (
            capabilities.mcp_capabilities
            if isinstance(capabilities, AgentCapabilities)
            else capabilities
        )
        self._check_caps = capabilities is not None
        self._startup_timeout = startup_timeout
        self._cwd = os.fspath(cwd) if cwd is not None else None
        self._inherit_env = inherit_env
        self._errlog = errlog
        self._client_name = client_name
        self._client_version = client_version
        self._conns: dict[str, _Conn] = {}
        self.failures: dict[str, str] = {}
        """Server name -> why it is unusable (start failure, timeout, refused kind)."""
        self._started = False
        self._closed = False

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> McpServers:
        await self.start()
        return self

    async def start(self) -> None:
        """Connect every server concurrently; returns once each is ready or failed.

        Never raises for a server's failure (see :attr:`failures`); raises
        ``ImportError`` if the ``mcp`` SDK is missing and there is at least
        one server to connect.
        """
        if self._started:
            raise RuntimeError("McpServers.start() called twice")
        self._started = True
        conns: list[_Conn] = []
        for index, server in enumerate(self._servers):
            conn_or_none = self._admit(index, server)
            if conn_or_none is not None:
                conns.append(conn_or_none)
        if not conns:
            return
        sdk = _import_sdk()
        import anyio

        for conn in conns:
            conn.scope = anyio.CancelScope()
            conn.task = asyncio.create_task(self._run(sdk, conn), name=f"mcp-server-{conn.name}")
        waiters = [asyncio.ensure_future(conn.ready.wait()) for conn in conns]
        try:
            await asyncio.wait(waiters, timeout=self._startup_timeout)
        except BaseException:
            # Cancelled while starting (e.g. the ACP request was cancelled):
            # ``async with`` will not call __aexit__, so stop everything here.
            await self.aclose()
            raise
        finally:
            for waiter in waiters:
                waiter.cancel()
        failed: list[_Conn] = []
        for conn in conns:
            if not conn.ready.is_set():
                conn.error = (
                    f"did not finish starting within {self._startup_timeout:g} s"
                    " (no answer to the MCP initialize handshake)"
                )
                conn.scope.cancel()  # torn down in the background; aclose() waits for it
            if conn.error is not None:
                failed.append(conn)
        messages = await asyncio.gather(
            *(self._with_stderr(c, c.error or "", wait=c.ready.is_set()) for c in failed)
        )
        for conn, message in zip(failed, messages, strict=True):
            self._fail(conn.name, message)

    def _admit(self, index: int, server: McpServer) -> _Conn | None:
        """Validate one config; record a failure and return None if it cannot be used."""
        if isinstance(server, UnknownVariant):
            raw_name = server.raw.get("name")
            name = raw_name if isinstance(raw_name, str) else f"#{index}"
            self._fail(name, f"unsupported MCP server type {server.tag!r}")
            return None
        name = server.name
        if isinstance(server, McpServerAcp) and (self._client is None or not self._client.unstable):
            self._fail(
                name,
                "MCP servers over ACP are unstable ACP: the agent must opt in "
                "(unstable = True) and give McpServers its client peer",
            )
            return None
        if name in self._conns or name in self.failures:
            self._fail(f"{name} (#{index})", f"duplicate MCP server name {name!r}; ignored")
            return None
        if self._check_caps:
            refused = self._unadvertised(server)
            if refused is not None:
                self._fail(name, refused)
                return None
        conn = _Conn(name=name, config=server)
        self._conns[name] = conn
        return conn

    def _unadvertised(self, server: McpServer) -> str | None:
        """Why ``server``'s transport is refused: the agent did not advertise it (stdio is
        always accepted); None if it did."""
        caps = self._mcp_caps
        for kind, flag, servers in _TRANSPORT_GATES:
            if isinstance(server, kind) and not (
                isinstance(caps, McpCapabilities) and getattr(caps, flag) is True
            ):
                return f"{servers} need mcpCapabilities.{flag}, which this agent did not advertise"
        return None

    def _fail(self, name: str, message: str) -> None:
        self.failures[name] = message
        logger.warning("MCP server %r unavailable: %s", name, message)

    async def _with_stderr(self, conn: _Conn, message: str, *, wait: bool = True) -> str:
        """Append the server's stderr tail; ``wait`` for it to end first (it has exited)."""
        if conn.http_error is not None:
            message = f"{message} (last HTTP error: {conn.http_error})"
        if conn.stderr is None:
            return message
        tail = await conn.stderr.text(wait=wait)
        return f"{message}; stderr: {tail}" if tail else message

    async def aclose(self) -> None:
        """Disconnect every server and stop every stdio server process."""
        if self._closed:
            return
        self._closed = True
        tasks: list[asyncio.Task[None]] = []
        for conn in self._conns.values():
            conn.closing.set()
            if not conn.ready.is_set() and conn.scope is not None:
                conn.scope.cancel()
            if conn.task is not None:
                tasks.append(conn.task)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for conn in self._conns.values():
            if conn.stderr is not None:
                conn.stderr.close_writer()

    async def _run(self, sdk: ModuleType, conn: _Conn) -> None:
        """Own one server's connection: enter, handshake, list tools, wait, exit."""
        try:
            with conn.scope:
                async with contextlib.AsyncExitStack() as stack:
                    info = sdk.types.Implementation(
                        name=self._client_name, version=self._client_version
                    )
                    if isinstance(conn.config, McpServerAcp):
                        assert self._client is not None  # checked by _admit
                        dispatcher = _AcpDispatcher(self._client, conn.config.server_id)
                        session = await stack.enter_async_context(
                            sdk.ClientSession(dispatcher=dispatcher, client_info=info)
                        )
                        await _discover(sdk, session)
                    else:
                        read, write = await self._open_transport(stack, conn)
                        session = await stack.enter_async_context(
                            sdk.ClientSession(read, write, client_info=info)
                        )
                        await session.initialize()
                    conn.tools = await self._list_tools(sdk, session, conn.name)
                    conn.session = session
                    conn.ready.set()
                    await conn.closing.wait()
        except Exception as exc:
            if conn.error is None and not conn.closing.is_set():
                phase = "connection lost" if conn.ready.is_set() else "failed to start"
                conn.error = f"{phase}: {_describe(exc)}"
                if conn.ready.is_set():  # died after startup
                    self.failures[conn.name] = await self._with_stderr(conn, conn.error)
            logger.debug("MCP server %r connection ended with an error", conn.name, exc_info=True)
        finally:
            conn.session = None
            if conn.error is None and not conn.ready.is_set() and not conn.closing.is_set():
                conn.error = "the connection ended during startup"
            conn.ready.set()

    async def _open_transport(
        self, stack: contextlib.AsyncExitStack, conn: _Conn
    ) -> tuple[Any, Any]:
        config = conn.config
        assert not isinstance(config, McpServerAcp)  # reached without a transport
        if isinstance(config, McpServerStdio):
            from mcp.client.stdio import StdioServerParameters, stdio_client

            base = dict(os.environ) if self._inherit_env else {}
            env = base | {item.name: item.value for item in config.env}
            errlog = self._errlog
            if errlog is None:
                conn.stderr = _StderrCapture(conn.name, asyncio.get_running_loop())
                errlog = conn.stderr.writer
            assert errlog is not None
            try:
                params = StdioServerParameters(
                    command=config.command, args=list(config.args), env=env, cwd=self._cwd
                )
                streams = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            finally:
                if conn.stderr is not None:
                    conn.stderr.close_writer()  # the child holds its own copy now
            return streams[0], streams[1]
        headers = {item.name: item.value for item in config.headers}
        if isinstance(config, McpServerHttp):
            streams = await stack.enter_async_context(_streamable_http(config.url, headers, conn))
        else:
            from mcp.client.sse import sse_client

            streams = await stack.enter_async_context(sse_client(config.url, headers=headers))
        return streams[0], streams[1]

    @staticmethod
    async def _list_tools(sdk: ModuleType, session: Any, server: str) -> list[McpTool]:
        tools: list[McpTool] = []
        cursor: str | None = None
        pages = 0
        while True:
            if cursor is None:
                listing = await session.list_tools()
            elif "params" in inspect.signature(session.list_tools).parameters:
                listing = await session.list_tools(
                    params=sdk.types.PaginatedRequestParams(cursor=cursor)
                )
            else:  # pragma: no cover - mcp 1.x
                listing = await session.list_tools(cursor=cursor)
            for tool in listing.tools:
                tools.append(
                    McpTool(
                        server=server,
                        name=tool.name,
                        description=tool.description,
                        input_schema=dict(_attr(tool, "input_schema", "inputSchema") or {}),
                        title=getattr(tool, "title", None),
                        output_schema=_attr(tool, "output_schema", "outputSchema"),
                    )
                )
            cursor = _attr(listing, "next_cursor", "nextCursor")
            pages += 1
            if not cursor or pages >= 100:
                return tools

    # ---------------------------------------------------------------- public API

    @property
    def servers(self) -> list[str]:
        """Names of the servers that are connected and usable."""
        return [name for name, conn in self._conns.items() if conn.session is not None]

    def tools(self, server: str | None = None) -> list[McpTool]:
        """The tools of every usable server (or of one), in server order."""
        return [
            tool
            for name, conn in self._conns.items()
            if conn.session is not None and (server is None or name == server)
            for tool in conn.tools
        ]

    async def call_tool(
        self, server: str, tool: str, arguments: Mapping[str, Any] | None = None
    ) -> McpToolResult:
        """Call ``tool`` on ``server``.

        A tool that runs and fails gives ``is_error=True``; an unknown or failed
        server, or a protocol-level error (e.g. an unknown tool), raises
        :class:`McpServerError`.
        """
        conn = self._conns.get(server)
        if conn is None or conn.session is None:
            if server in self.failures:
                raise McpServerError(
                    f"MCP server {server!r} is unavailable: {self.failures[server]}"
                )
            if conn is None:
                known = ", ".join(repr(n) for n in self.servers) or "none"
                raise McpServerError(f"no MCP server named {server!r} (connected: {known})")
            raise McpServerError(f"MCP server {server!r} is not connected")
        try:
            result = await conn.session.call_tool(tool, dict(arguments or {}))
        except Exception as exc:
            raise McpServerError(
                f"MCP server {server!r}: tools/call {tool!r} failed: {_describe(exc)}"
            ) from exc
        return _convert_result(result)


def _convert_result(result: Any) -> McpToolResult:
    texts: list[str] = []
    blocks: list[dict[str, Any]] = []
    for block in result.content:
        if getattr(block, "type", None) == "text":
            texts.append(block.text)
        dumped = block.model_dump(mode="json", by_alias=True, exclude_none=True)
        # pydantic's JSON dump of a content block: an object with string keys.
        blocks.append(
            cast("dict[str, Any]", dumped) if isinstance(dumped, dict) else {"value": dumped}
        )
    return McpToolResult(
        text="\n".join(texts),
        structured=_attr(result, "structured_content", "structuredContent"),
        is_error=bool(_attr(result, "is_error", "isError", False)),
        content=blocks,
    )


@contextlib.asynccontextmanager
async def _streamable_http(
    url: str, headers: dict[str, str], conn: _Conn
) -> AsyncGenerator[Any, None]:
    """The SDK's streamable HTTP client with headers, across SDK versions.

    The SDK reports an HTTP error status only as "Server returned an error
    response"; a response hook keeps the status for the failure message.
    """
    from mcp.client import streamable_http as sh

    async def note_status(response: Any) -> None:
        if response.status_code >= 400:
            conn.http_error = f"{response.status_code} {response.reason_phrase}".strip()

    if hasattr(sh, "streamable_http_client"):
        from mcp.shared._httpx_utils import create_mcp_http_client

        http_client = create_mcp_http_client(headers=headers)
        http_client.event_hooks["response"].append(note_status)
        async with (
            http_client,
            sh.streamable_http_client(url, http_client=http_client) as streams,
        ):
            yield streams
    else:  # pragma: no cover - mcp 1.x before streamable_http_client
        legacy_client = getattr(sh, "streamablehttp_client")  # noqa: B009
        async with legacy_client(url, headers=headers) as streams:
            yield streams


async def _discover(sdk: ModuleType, session: Any) -> None:
    """Adopt the server's MCP 2026-07-28 discovery (``server/discover``), or a minimal
    one if the server does not implement it (it is optional to answer over ACP)."""
    from mcp.shared.exceptions import MCPError

    try:
        await session.discover()
    except MCPError as exc:
        if exc.code != -32601:
            raise
        session.adopt(
            sdk.types.DiscoverResult(
                supported_versions=[MCP_PROTOCOL_VERSION],
                capabilities=sdk.types.ServerCapabilities(tools=sdk.types.ToolsCapability()),
                result_type="complete",
                ttl_ms=0,
                cache_scope="public",
            )
        )


class _NotifyContext:
    """What the ``mcp`` SDK's notification handler is given: no transport details,
    and no way back (an MCP 2026-07-28 client answers nothing)."""

    def __init__(self) -> None:
        from mcp.shared.transport_context import TransportContext

        self.transport = TransportContext(kind="acp", can_send_request=False)
        self.can_send_request = False
        self.request_id = None
        self.message_metadata = None


class _AcpDispatcher:
    """The ``mcp`` SDK's ``Dispatcher`` over MCP over ACP: one ``mcp/message`` request
    per MCP request, to one server the ACP client offers.

    Outer ACP errors (unknown server, binding failures, the connection closing)
    reach the SDK as ``MCPError`` with the ACP code; inner MCP errors with theirs.
    Cancelling a request cancels the ACP request (``$/cancel_request``), which is
    the binding's cancellation, so MCP's ``notifications/cancelled`` is not sent;
    MCP 2026-07-28 defines no other client-to-server notification.
    """

    def __init__(self, client: ClientPeer, server_id: str) -> None:
        import anyio

        self._client = client
        self._server_id = server_id
        self._on_notify: Any = None
        self._intercept: Any = None
        self._closed = anyio.Event()

    async def send_raw_request(
        self, method: str, params: Any = None, opts: Any = None
    ) -> dict[str, Any]:
        import anyio
        from mcp.shared.exceptions import MCPError

        options: dict[str, Any] = dict(opts or {})
        on_progress = options.get("on_progress")
        request_id = options.get("request_id")

        async def listener(note: MessageMcpNotification) -> None:
            body = note.params if isinstance(note.params, dict) else None
            if note.method == "notifications/progress" and on_progress is not None and body:
                progress = body.get("progress")
                if isinstance(progress, (int, float)):
                    await on_progress(float(progress), body.get("total"), body.get("message"))
                return
            await self._deliver(note.method, body)

        try:
            with anyio.fail_after(options.get("timeout")):
                answer = await self._client.mcp_message(
                    self._server_id,
                    method,
                    None if params is None else dict(params),
                    request_id=None if request_id is None else str(request_id),
                    on_notification=listener,
                )
        except TimeoutError:
            raise MCPError(-32001, f"timed out waiting for {method!r} over ACP") from None
        except RequestError as exc:
            raise MCPError(exc.code, exc.message, exc.data) from None
        except AcpError as exc:  # connection closed, capability refused
            raise MCPError(-32000, str(exc)) from None
        if answer.error is not UNSET:
            error = answer.error
            data = unset_to_none(error.data)
            raise MCPError(error.code, error.message, data)
        result: object = answer.result
        if not isinstance(result, dict):
            raise MCPError(-32603, f"MCP server answered {method!r} with a non-object result")
        return cast("dict[str, Any]", result)

    async def _deliver(self, method: str, params: dict[str, Any] | None) -> None:
        from mcp.shared.dispatcher import run_notify_intercept

        if run_notify_intercept(self._intercept, method, params):
            return
        if self._on_notify is not None:
            await self._on_notify(_NotifyContext(), method, params)

    async def notify(self, method: str, params: Any = None, opts: Any = None) -> None:
        logger.debug("MCP over ACP carries no client notifications; dropped %s", method)

    async def run(
        self,
        on_request: Any,
        on_notify: Any,
        on_notify_intercept: Any = None,
        *,
        task_status: Any = None,
    ) -> None:
        self._on_notify = on_notify
        self._intercept = on_notify_intercept
        if task_status is not None:
            task_status.started()
        await self._closed.wait()

    def close(self) -> None:
        self._closed.set()
