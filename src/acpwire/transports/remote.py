"""A remote agent by URL, and a client connection that survives its transport breaking.

:func:`connect_remote` opens ``ws(s)://`` or ``http(s)://`` URLs (WebSocket by
default, Streamable HTTP on request) and, unless told not to, wraps the
transport in a :class:`ReconnectingTransport`.

What :class:`ReconnectingTransport` guarantees (docs/remote.md, "Reconnect"):

* **Two levels.** The WebSocket and HTTP transports first try to *resume*
  the same server connection (same ``Acp-Connection-Id``, ``Last-Event-ID``):
  nothing is lost or repeated and nobody above notices. When that is not
  possible (the server restarted, or the gap outgrew the server's event log),
  the transport below ends and this one *reconnects*: a new connection, the
  application's own ``initialize`` again, then every session it had open is
  re-attached with ``session/resume`` (or ``session/load``, whose replay of
  what the client already has is dropped), under the same session ids.
* **Backoff.** Attempts wait 0.2 s, doubling up to 10 s, with jitter; after
  ``give_up_after`` seconds (default 300) without success the transport ends
  broken. A refused token (HTTP 401/403) ends it at once, and so does a break
  before the first ``initialize`` was answered (there is nothing to restore yet): the
  send or the receive raises, so the application hears at once why.
* **A gap is reported, never hidden.** Requests that were in flight are
  answered here with a :class:`~acpwire.protocol.errors.ConnectionLost` error
  (code -32099, ``data.sessionReattached``), which the application can tell from
  any agent error; messages the application sends while the connection is down
  wait for it; answers to requests of the old connection are dropped (its agent
  side is gone). ``on_reconnect`` receives a :class:`Reconnected` telling which
  sessions came back and which could not.
* **Only protocol passes.** Every message the application sends or receives
  passes unchanged; the replayed ``initialize`` and the re-attach requests use
  ids of their own (``"acpwire-reconnect-N"``) and their answers stop here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import ssl as ssl_module
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import msgspec

from .._waits import within
from ..protocol.errors import ConnectionClosedError, ErrorCode
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE, Oversize
from ..protocol.peek import SESSION_OPENING, NotAMessage, Peeked, peek
from .base import NamesConnection, Transport

log = logging.getLogger("acpwire.transports.remote")

Connector = Callable[[], Awaitable[Transport]]
RequestId = str | int

REATTACHED = "connection lost; session re-attached"
NOT_REATTACHED = "connection lost; session not re-attached"
LOST = "connection lost"


@dataclass(frozen=True)
class Reconnected:
    """What :class:`ReconnectingTransport` tells the application after a reconnect."""

    attempts: int
    """Connection attempts it took."""
    reattached: tuple[str, ...]
    """Sessions attached again, under the same ids."""
    lost: Mapping[str, str] = field(default_factory=dict[str, str])
    """Sessions that could not be attached again, with the reason."""
    interrupted: tuple[RequestId, ...] = ()
    """Requests that were in flight and were answered with ``ConnectionLost``."""


@dataclass(frozen=True)
class Backoff:
    """Delays between reconnect attempts: ``initial`` doubling up to ``maximum``, +-25 % jitter."""

    initial: float = 0.2
    maximum: float = 10.0

    def delay(self, attempt: int) -> float:
        base: float = min(self.maximum, self.initial * 2.0 ** max(0, attempt - 1))
        return base * random.uniform(0.75, 1.25)


@dataclass(slots=True)
class _Request:
    method: str
    session: str | None
    params: Any


class _Ended:
    def __init__(self, error: ConnectionClosedError | None) -> None:
        self.error = error


_decode = msgspec.json.decode
_encode = msgspec.json.encode


def _object(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _member(message: bytes, name: str) -> dict[str, Any]:
    """The object ``name`` (``params``, ``result``, ``error``) of a message, or ``{}``."""
    try:
        document: object = _decode(message)
    except msgspec.DecodeError:
        return {}
    return _object(_object(document).get(name))


def token_refused(error: BaseException) -> bool:
    """An answer that retrying will not change: the token was refused (HTTP 401 or 403)."""
    text = str(error)
    return any(
        code in text for code in ("HTTP 401", "HTTP 403", "answered HTTP 401", "answered HTTP 403")
    )


class ReconnectingTransport:
    """A :class:`~acpwire.transports.base.Transport` that reconnects and re-attaches sessions.

    ``connect`` opens a fresh transport to the same server; ``first`` is an
    already open one. See the module docstring for the guarantees.
    """

    def __init__(
        self,
        connect: Connector,
        first: Transport,
        *,
        on_reconnect: Callable[[Reconnected], None] | None = None,
        give_up_after: float = 300.0,
        backoff: Backoff | None = None,
        call_timeout: float = 60.0,
    ) -> None:
        self._connect = connect
        self._transport = first
        self.on_reconnect = on_reconnect
        self.give_up_after = give_up_after
        self.backoff = backoff or Backoff()
        self.call_timeout = call_timeout
        self.reconnects = 0
        """How many times a new connection replaced a broken one."""
        self._inbox: asyncio.Queue[bytes | Oversize | _Ended] = asyncio.Queue(256)
        self._up = asyncio.Event()
        self._up.set()
        self._closed = False
        self._ended = False
        self._initialize: Any = None
        self._capabilities: dict[str, Any] = {}
        self._pending: dict[RequestId, _Request] = {}
        self._sessions: dict[str, dict[str, Any]] = {}
        """Open sessions and the parameters that opened them (cwd, mcpServers, directories)."""
        self._agent_requests: set[RequestId] = set()
        """Requests of the agent on the current connection, not yet answered."""
        self._initialized = False
        """Whether ``initialize`` was ever answered: until then there is nothing to restore."""
        self._serial = 0
        self._pump = asyncio.ensure_future(self._run())

    # -- the contract ----------------------------------------------------------------

    async def send(self, message: bytes) -> None:
        if self._closed:
            raise ConnectionClosedError("transport is closed")
        await self._up.wait()
        if self._ended:
            raise ConnectionClosedError(
                "the connection is lost and could not be restored", broken=True
            )
        try:
            p = peek(message)
        except NotAMessage:
            p = None
        if p is not None and not self._outgoing(p, message):
            return
        try:
            await self._transport.send(message)
        except ConnectionClosedError as exc:
            if self._closed or not self._initialized or token_refused(exc):
                raise
            # The pump sees the same break and reconnects; a request sent now is
            # answered ConnectionLost then, like any other in flight.
            log.info("send failed (%s); reconnecting", exc)
            with contextlib.suppress(Exception):
                await self._transport.close()

    async def receive(self) -> bytes | Oversize | None:
        item = await self._inbox.get()
        if isinstance(item, _Ended):
            self._inbox.put_nowait(item)  # every later receive ends the same way
            if item.error is not None:
                raise item.error
            return None
        return item

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._up.set()
        with contextlib.suppress(Exception):
            await self._transport.close()
        self._pump.cancel()
        with contextlib.suppress(BaseException):
            await self._pump

    @property
    def connection_id(self) -> str | None:
        """The current server connection's ``Acp-Connection-Id``."""
        transport = self._transport
        return transport.connection_id if isinstance(transport, NamesConnection) else None

    # -- bookkeeping -------------------------------------------------------------------

    def _outgoing(self, p: Peeked, message: bytes) -> bool:
        """Record what the application sends; ``False`` drops the message."""
        if p.kind == "request" and p.id is not None and p.method is not None:
            remembered = p.method == "initialize" or p.method in SESSION_OPENING
            params = _member(message, "params") if remembered else None
            if p.method == "initialize":
                self._initialize = params
            self._pending[p.id] = _Request(p.method, p.session_id, params)
        elif p.kind == "response" and p.id is not None:
            if p.id not in self._agent_requests:
                log.info("dropped an answer to request %r of a connection that is gone", p.id)
                return False
            self._agent_requests.discard(p.id)
        return True

    def _incoming(self, p: Peeked, message: bytes) -> None:
        if p.kind == "request" and p.id is not None:
            self._agent_requests.add(p.id)
            return
        if p.kind != "response" or p.id is None:
            return
        request = self._pending.pop(p.id, None)
        if request is None or p.is_error:
            return
        if request.method == "initialize":
            self._initialized = True
            self._capabilities = _object(_member(message, "result").get("agentCapabilities"))
        elif request.method in SESSION_OPENING:
            params = _object(request.params)
            session = p.session_id or params.get("sessionId")
            if isinstance(session, str):
                self._sessions[session] = {
                    k: v
                    for k, v in params.items()
                    if k in ("cwd", "mcpServers", "additionalDirectories")
                }
        elif request.method in ("session/close", "session/delete") and request.session is not None:
            self._sessions.pop(request.session, None)

    # -- the pump ----------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            error: ConnectionClosedError | None = None
            try:
                while True:
                    message = await self._transport.receive()
                    if message is None:
                        break
                    if isinstance(message, bytes):
                        try:
                            self._incoming(peek(message), message)
                        except NotAMessage:
                            pass
                    await self._inbox.put(message)
            except ConnectionClosedError as exc:
                error = exc
            if self._closed:
                await self._inbox.put(_Ended(None))
                return
            if not self._initialized:  # nothing to restore: the application hears why now
                self._ended = True
                reason = error or ConnectionClosedError(
                    "the server ended the connection before initialize was answered", broken=True
                )
                await self._inbox.put(_Ended(reason))
                return
            log.warning("connection to the agent lost (%s); reconnecting", error or "ended")
            if not await self._reconnect():
                return

    async def _reconnect(self) -> bool:
        self._up.clear()
        with contextlib.suppress(Exception):
            await self._transport.close()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.give_up_after
        attempt = 0
        last: BaseException | None = None
        while not self._closed:
            attempt += 1
            if attempt > 1:
                await asyncio.sleep(
                    min(self.backoff.delay(attempt - 1), max(0.0, deadline - loop.time()))
                )
            if loop.time() > deadline:
                break
            try:
                transport = await self._connect()
            except (ConnectionClosedError, OSError) as exc:
                last = exc
                log.info("reconnect attempt %d failed: %s", attempt, exc)
                if token_refused(exc):
                    break
                continue
            try:
                backlog, event = await self._restore(transport, attempt)
            except (ConnectionClosedError, asyncio.TimeoutError, OSError) as exc:
                last = exc
                log.info("reconnect attempt %d failed while restoring: %s", attempt, exc)
                with contextlib.suppress(Exception):
                    await transport.close()
                continue
            self._transport = transport
            self.reconnects += 1
            for message in backlog:
                await self._inbox.put(message)
            self._up.set()
            if self.on_reconnect is not None:
                try:
                    self.on_reconnect(event)
                except Exception:
                    log.exception("on_reconnect failed")
            return True
        self._ended = True
        self._up.set()
        if self._closed:
            await self._inbox.put(_Ended(None))
        else:
            await self._inbox.put(
                _Ended(
                    ConnectionClosedError(f"connection lost and not restored: {last}", broken=True)
                )
            )
        return False

    async def _restore(
        self, transport: Transport, attempts: int
    ) -> tuple[list[bytes], Reconnected]:
        """``initialize`` again and re-attach every session; answer what was in flight."""
        backlog: list[bytes] = []
        if self._initialize is None:
            raise ConnectionClosedError("nothing to restore: initialize was never sent")
        await self._call(transport, "initialize", self._initialize, backlog)
        resume = _object(self._capabilities.get("sessionCapabilities")).get("resume") is not None
        load = bool(self._capabilities.get("loadSession"))
        reattached: list[str] = []
        lost: dict[str, str] = {}
        for session, opened in list(self._sessions.items()):
            params = {"sessionId": session, **opened}
            method = "session/resume" if resume else "session/load" if load else None
            if method is None:
                lost[session] = "the agent can neither resume nor load sessions"
                continue
            if method == "session/load":
                params.setdefault("mcpServers", [])
            error = await self._call(transport, method, params, backlog, quiet=session)
            if error is None:
                reattached.append(session)
            else:
                lost[session] = error
                self._sessions.pop(session, None)
        interrupted: list[RequestId] = []
        for request_id, request in list(self._pending.items()):
            if request.method in ("initialize", "session/new", "session/fork"):
                text, again = LOST, False
            elif request.session in lost:
                text, again = NOT_REATTACHED, False
            elif request.session is not None:
                text, again = REATTACHED, True
            else:
                text, again = LOST, False
            backlog.append(
                _encode(
                    {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "error": {
                            "code": int(ErrorCode.CONNECTION_LOST),
                            "message": text,
                            "data": {"sessionReattached": again},
                        },
                    }
                )
            )
            interrupted.append(request_id)
        self._pending.clear()
        self._agent_requests.clear()
        event = Reconnected(attempts, tuple(reattached), lost, tuple(interrupted))
        log.warning(
            "reconnected after %d attempt(s): %d session(s) re-attached, %d lost, %d request(s) interrupted",
            attempts,
            len(reattached),
            len(lost),
            len(interrupted),
        )
        return backlog, event

    async def _call(
        self,
        transport: Transport,
        method: str,
        params: Any,
        backlog: list[bytes],
        *,
        quiet: str | None = None,
    ) -> str | None:
        """One request of our own; its answer stops here (``None`` or the error's message).

        While it runs, ``session/update`` notifications of session ``quiet`` are
        dropped (the replay of a ``session/load``); anything else is kept for the
        application.
        """
        self._serial += 1
        request_id = f"acpwire-reconnect-{self._serial}"
        await transport.send(
            _encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        )

        async def answer() -> str | None:
            while True:
                message = await transport.receive()
                if message is None:
                    raise ConnectionClosedError("the server ended the connection while restoring")
                if not isinstance(message, bytes):
                    continue
                try:
                    p = peek(message)
                except NotAMessage:
                    continue
                if p.kind == "response" and p.id == request_id:
                    if p.is_error:
                        return str(_member(message, "error").get("message") or "error")
                    if method == "initialize":
                        self._capabilities = _object(
                            _member(message, "result").get("agentCapabilities")
                        )
                    return None
                if quiet is not None and p.method == "session/update" and p.session_id == quiet:
                    continue
                self._incoming(p, message)
                backlog.append(message)

        result = await within(answer(), self.call_timeout)
        if method == "initialize" and result is not None:
            raise ConnectionClosedError(f"initialize failed on reconnect: {result}", broken=True)
        return result


Kind = Literal["websocket", "http"]


async def connect_remote(
    url: str,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    kind: Kind = "websocket",
    http2: bool | None = None,
    reconnect: bool = True,
    on_reconnect: Callable[[Reconnected], None] | None = None,
    give_up_after: float = 300.0,
    ssl: ssl_module.SSLContext | None = None,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
) -> Transport:
    """A transport to the ACP endpoint at ``url``, reconnecting unless ``reconnect=False``.

    ``kind="websocket"`` (the default) upgrades ``ws(s)://`` or ``http(s)://``
    URLs; ``kind="http"`` speaks Streamable HTTP to ``http(s)://`` URLs, over
    HTTP/2 when ``http2`` is true, HTTP/1.1 when false, and HTTP/2 with a
    fallback to HTTP/1.1 when ``None`` (the RFD requires HTTP/2; not every
    server has it). ``token`` goes in ``Authorization: Bearer``; ``headers`` on
    every request; cookies the server sets are returned on every request and
    reconnect. Raises :class:`~acpwire.protocol.errors.ConnectionClosedError`
    when the first connection cannot be made.
    """
    import httpx

    cookies = httpx.Cookies()
    scheme = url.split("://", 1)[0].lower()

    async def connect() -> Transport:
        if kind == "websocket":
            from .websocket import connect_websocket

            target = url
            if scheme in ("http", "https"):
                target = ("wss" if scheme == "https" else "ws") + url[len(scheme) :]
            return await connect_websocket(
                target,
                token=token,
                headers=headers,
                ssl=ssl,
                cookies=cookies,
                max_message_size=max_message_size,
                resume=reconnect,
            )
        from .http import connect_http

        target = url
        if scheme in ("ws", "wss"):
            target = ("https" if scheme == "wss" else "http") + url[len(scheme) :]
        return await connect_http(
            target,
            token=token,
            headers=headers,
            http2=http2,
            verify=ssl if ssl is not None else True,
            cookies=cookies,
            max_message_size=max_message_size,
        )

    first = await connect()
    if not reconnect:
        return first
    return ReconnectingTransport(
        connect, first, on_reconnect=on_reconnect, give_up_after=give_up_after
    )
