"""ACP over a WebSocket (client side): one JSON-RPC message per text frame.

RFD streamable-http-websocket-transport: a GET with ``Upgrade: websocket`` on
the ``/acp`` endpoint creates a connection, whose id comes back in the
``Acp-Connection-Id`` header of the 101 response; messages are text frames and
binary frames are ignored. ``initialize`` is still the first message.

Against a server that advertises ``transport.resumable`` in its ``initialize``
answer (RFD durable-resumable-http-transport; ``acp serve --resumable``), the
transport keeps the cursor of the last message it received and resumes by it:
a new socket with the same ``Acp-Connection-Id``, ``stream/resume`` as its
first frame; what the server replays before its ``stream/resumed`` is
delivered, and a message whose cursor was delivered already is dropped. It
also watches the socket: one that carries nothing (not even the server's
pings) for five keepalive intervals is treated as dropped and resumed.

Uses the ``websockets`` package (the ``remote`` extra), imported on first use.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl as ssl_module
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

import msgspec

from .._waits import within
from ..protocol.cursors import (
    RESUME,
    RESUME_FAILED,
    RESUMED,
    STREAM_IN_USE,
    TURN_STATE,
    TURN_STATES,
    control,
    cursor_of,
)
from ..protocol.errors import ConnectionClosedError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE, Oversize
from ._durable import Durable, backoff_delays, resumable_of
from .http import STILL_HELD, auth_headers

INSTALL_HINT = "the WebSocket transport needs the remote extra: pip install 'acpwire[remote]'"

_TOO_BIG = 1009  # WebSocket close code: message too big
CONNECTION_ID = "Acp-Connection-Id"

log = logging.getLogger("acpwire.transports.websocket")


def _websockets() -> Any:
    try:
        import websockets.asyncio.client as client
        import websockets.exceptions as exceptions
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return client, exceptions


_PUSHING: Any = None


def _pushing_connection() -> Any:
    """``websockets``' client connection (its documented ``create_connection`` hook),
    taking each whole text message that arrives while none waits in its queue to
    ``push``: the engine takes it in the socket's callback (transports/base.py,
    ``push_to``), one event-loop turn sooner than through ``recv()``."""
    global _PUSHING
    if _PUSHING is None:
        from websockets.frames import Frame, Opcode

        client, _ = _websockets()

        class PushingConnection(client.ClientConnection):  # type: ignore[misc,name-defined]
            push: Callable[[bytes], bool] | None = None
            queued = 0
            """Whole messages handed to ``recv()``'s queue and not yet taken."""
            heard = 0.0
            """When the last frame of any kind (a Ping included) arrived (loop time)."""

            def process_event(self, event: Any) -> None:
                if isinstance(event, Frame):
                    self.heard = self.loop.time()
                if isinstance(event, Frame) and self.response is not None:
                    if event.opcode is Opcode.TEXT and event.fin and not self.queued:
                        push = self.push
                        if push is not None and push(bytes(event.data)):
                            return  # websockets checked it is UTF-8
                    if event.fin and event.opcode in (Opcode.TEXT, Opcode.BINARY, Opcode.CONT):
                        self.queued += 1
                super().process_event(event)

        _PUSHING = PushingConnection
    return _PUSHING


def _is_pushing(ws: object) -> bool:
    """Whether ``ws`` is a :func:`_pushing_connection` (a socket made by another client
    library, or before the class was, is not)."""
    return _PUSHING is not None and isinstance(ws, _PUSHING)


Opener = Callable[[Mapping[str, str]], Awaitable[Any]]
"""Opens a new socket to the same endpoint with these extra headers (raises on failure)."""


class WebSocketTransport:
    """A :class:`~acpwire.transports.base.Transport` over an open WebSocket.

    Made with ``resume`` (see :func:`connect_websocket`), it counts the frames it
    received and keeps the last ``resume_messages`` it sent; when the socket drops
    without a close frame, it re-attaches a new socket to the same server connection
    for up to ``resume_within`` seconds, replays what the server missed, and carries
    on: nothing lost, nothing twice, nobody above notices. Against a server that
    advertises ``transport.resumable`` it resumes by cursor (``stream/resume``, see
    the module docstring), else by acpwire's earlier headers (``Acp-Connection-Id``
    and ``Last-Event-ID``: the frames it has; the server's 101 says which of ours it
    has). If the server refuses (it restarted, or the gap outgrew its log), the
    transport ends broken, as it does without ``resume``.
    """

    def __init__(
        self,
        websocket: Any,
        *,
        connection_id: str | None = None,
        cookies: Any = None,
        reopen: Opener | None = None,
        end: Callable[[str], Awaitable[None]] | None = None,
        resume_within: float = 30.0,
        resume_messages: int = 256,
    ) -> None:
        self._ws = websocket
        self.connection_id = connection_id
        """The server's ``Acp-Connection-Id`` for this connection, if it sent one."""
        self.cookies: Any = cookies
        """The cookie jar (``httpx.Cookies``) the upgrade answer's cookies went into."""
        self.resumes = 0
        """How many times a dropped socket was replaced by a resumed one."""
        self.durable: Durable | None = None
        """What the server's ``initialize`` answer advertised of ``transport.resumable``."""
        self.cursor: str | None = None
        """(Durable) The cursor of the last message delivered."""
        self.turn_states: dict[str, Any] = {}
        """(Durable) The turn states the last ``stream/resumed`` reported, by session."""
        self._closed = False
        self._reopen = reopen
        self._end = end
        self._resume_within = resume_within
        self._received = 0
        self._sent: deque[tuple[int, str]] = deque(maxlen=resume_messages)
        self._sent_count = 0
        self._resuming = asyncio.Lock()
        self._sink: Callable[[bytes], bool] | None = None
        self._answered = False
        """An answer carrying ``protocolVersion`` (``initialize``'s) has been seen."""
        self._backlog: deque[bytes] = deque()
        """(Durable) What a resumed socket replayed before its acknowledgment."""
        self._watchdog: asyncio.Task[None] | None = None
        self._gone: ConnectionClosedError | None = None
        """(Durable) How the connection ended, once what was replayed is delivered."""
        _, self._errors = _websockets()

    def push_to(self, sink: Callable[[bytes], bool]) -> None:
        """See transports/base.py: text messages go to ``sink`` while none is queued."""
        self._sink = sink
        self._hook(self._ws)

    def _hook(self, ws: Any) -> None:
        # Until initialize is answered, every message goes through receive(), which
        # looks for the server's transport capabilities in its answer.
        if self._sink is not None and _is_pushing(ws) and self._answered:
            ws.push = self._push

    def _push(self, message: bytes) -> bool:
        sink = self._sink
        if sink is None or self._closed or self._backlog:
            return False
        cursor = self._new_cursor(message) if self.durable is not None else None
        if cursor is False:
            self._received += 1
            return True  # a repeat of what was delivered before a resume: dropped
        if not sink(message):
            return False
        self._received += 1
        if isinstance(cursor, str):
            self.cursor = cursor
        return True

    def _ended(self, exc: Exception) -> ConnectionClosedError | None:
        """``None`` for a clean close; else the error to raise."""
        rcvd = getattr(exc, "rcvd", None)
        if isinstance(exc, self._errors.ConnectionClosedOK):
            return None
        code = getattr(rcvd, "code", None)
        sent = getattr(exc, "sent", None)
        if code == _TOO_BIG or getattr(sent, "code", None) == _TOO_BIG:
            return ConnectionClosedError("a message exceeded the size limit", broken=True)
        return ConnectionClosedError(f"websocket closed: {exc}", broken=True)

    def _dropped(self, exc: Exception) -> bool:
        """The socket died without a close frame (network, server killed): worth resuming."""
        return (
            self._reopen is not None
            and not self._closed
            and getattr(exc, "rcvd", None) is None
            and getattr(exc, "sent", None) is None
        )

    async def send(self, message: bytes) -> None:
        if self._closed:
            raise ConnectionClosedError("transport is closed")
        text = message.decode("utf-8")
        if self._reopen is not None:
            self._sent_count += 1
            self._sent.append((self._sent_count, text))
        ws = self._ws
        try:
            await ws.send(text)
        except self._errors.ConnectionClosed as exc:
            if self._dropped(exc) and await self._resume(ws):
                return  # the resumed socket carried it (it was in the log)
            error = self._ended(exc)
            raise error or ConnectionClosedError("the server closed the connection") from exc

    async def receive(self) -> bytes | Oversize | None:
        while True:
            if self._backlog:
                frame: str | bytes = self._backlog.popleft()
            elif self._gone is not None:
                raise self._gone
            else:
                ws = self._ws
                try:
                    frame = await ws.recv()
                except self._errors.ConnectionClosed as exc:
                    if self._dropped(exc) and await self._resume(ws):
                        continue
                    if self._backlog:
                        continue  # what a refused resume replayed comes first
                    error = self._ended(exc)
                    if error is None:
                        return None
                    raise error from exc
                if _is_pushing(ws):
                    ws.queued -= 1
                if not isinstance(frame, str):
                    continue  # binary frames carry no ACP message (RFD): skip them
                self._received += 1
            message = frame.encode("utf-8") if isinstance(frame, str) else frame
            if not self._answered:
                self._look_for_advert(message)
            if self.durable is not None:
                cursor = self._new_cursor(message)
                if cursor is False:
                    continue
                if isinstance(cursor, str):
                    self.cursor = cursor
            return message

    def _look_for_advert(self, message: bytes) -> None:
        """Read ``transport.resumable`` off ``initialize``'s answer."""
        if b'"protocolVersion"' not in message:
            return
        self._answered = True
        self.durable = resumable_of(message)
        if self.durable is not None:
            log.info("the server resumes by cursor: %s", self.durable)
            if self._watchdog is None and self.durable.keepalive is not None:
                self._watchdog = asyncio.ensure_future(self._watch(self.durable.keepalive))
        self._hook(self._ws)

    def _new_cursor(self, message: bytes) -> str | bool:
        """(Durable) ``message``'s cursor when it is new; ``True`` when it has none (not a
        position in the stream); ``False`` when it repeats a message already delivered
        (a replay may repeat what arrived before the socket dropped)."""
        cursor = cursor_of(message)
        if cursor is None:
            return True
        last = self.cursor
        if last is not None and cursor.isdigit() and last.isdigit() and int(cursor) <= int(last):
            return False
        return cursor

    async def _watch(self, interval: float) -> None:
        """(Durable) A socket that carried nothing, not even a Ping, for five keepalive
        intervals is dead though the network did not say so: abort it, and resume."""
        loop = asyncio.get_running_loop()
        while not self._closed:
            await asyncio.sleep(interval)
            ws = self._ws
            heard = getattr(ws, "heard", 0.0) or loop.time()
            if loop.time() - heard > 5 * interval:
                log.info("nothing heard for %.0f s: the socket is dead", 5 * interval)
                transport = getattr(ws, "transport", None)
                if transport is not None:
                    transport.abort()

    async def _resume(self, dropped: Any) -> bool:
        """Replace the dropped socket by one re-attached to the same connection."""
        async with self._resuming:
            if self._ws is not dropped:
                return True  # the other direction already resumed it
            if self._reopen is None or self.connection_id is None:
                return False
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self._resume_within
            delays = backoff_delays()
            while not self._closed and loop.time() < deadline:
                try:
                    if self.durable is not None:
                        resumed = await self._resume_by_cursor(deadline)
                    else:
                        resumed = await self._resume_by_headers()
                except (OSError, TimeoutError, self._errors.InvalidHandshake) as exc:
                    log.info("resuming the connection failed (%s); retrying", exc)
                    resumed = None
                except self._errors.ConnectionClosed as exc:
                    log.info("the resumed socket dropped too (%s); retrying", exc)
                    resumed = None
                if resumed is False:
                    return False
                if resumed is not None:
                    self._ws = resumed
                    self._hook(resumed)
                    self.resumes += 1
                    log.info("resumed the connection after frame %d", self._received)
                    return True
                await asyncio.sleep(min(next(delays), max(0.0, deadline - loop.time())))
            return False

    async def _resume_by_headers(self) -> Any:
        """acpwire's earlier resume: the socket, ``None`` to try again, ``False`` when the
        server refused."""
        assert self._reopen is not None and self.connection_id is not None
        headers = {"Acp-Connection-Id": self.connection_id, "Last-Event-ID": str(self._received)}
        try:
            ws = await self._reopen(headers)
        except self._errors.InvalidStatus as exc:
            if exc.response.status_code != STILL_HELD:
                log.info("the server refused to resume the connection: %s", exc)
                return False
            log.info("the dropped socket is still held on the server; retrying")
            return None
        has = ws.response.headers.get("Last-Event-ID", "") if ws.response else ""
        if not await self._replay(ws, int(has) if has.isdigit() else -1):
            await ws.close()
            return False
        return ws

    async def _resume_by_cursor(self, deadline: float) -> Any:
        """The durable transport draft's resume: ``stream/resume`` with the last cursor;
        the socket, ``None`` to try again, ``False`` when the server refused."""
        assert self._reopen is not None and self.connection_id is not None
        ws = await self._reopen({"Acp-Connection-Id": self.connection_id})
        stream = {"cursor": self.cursor or "0"}
        params = {"connectionId": self.connection_id, "streams": [stream]}
        await ws.send(control(RESUME, params).decode())
        replayed: list[bytes] = []
        loop = asyncio.get_running_loop()
        while True:
            frame = await within(ws.recv(), max(0.1, deadline - loop.time()))
            if not isinstance(frame, str):
                continue
            message = frame.encode("utf-8")
            if RESUMED.encode() not in message and RESUME_FAILED.encode() not in message:
                replayed.append(message)
                continue
            reply = _control(message)
            if reply is None:
                replayed.append(message)
                continue
            method, result = reply
            if method == RESUME_FAILED:
                await ws.close()
                reason = result.get("reason")
                if reason == STREAM_IN_USE:
                    log.info("the dropped socket is still held on the server; retrying")
                    return None
                log.info("the server refused to resume the connection: %s", reason)
                if replayed:  # a dead worker's messages, replayed: delivered, then the end
                    self._note_turn_states(result)
                    self._backlog.extend(replayed)
                    self._gone = ConnectionClosedError(
                        f"the server cannot resume the connection: {reason}", broken=True
                    )
                return False
            self._note_turn_states(result)
            received = result.get("received")
            has = int(received) if isinstance(received, str) and received.isdigit() else -1
            if not await self._replay(ws, has):
                await ws.close()
                return False
            self._backlog.extend(replayed)
            return ws

    def _note_turn_states(self, params: dict[str, Any]) -> None:
        meta = params.get("_meta")
        if not isinstance(meta, dict):
            return
        meta = cast("dict[str, Any]", meta)
        states = meta.get(TURN_STATES)
        if isinstance(states, dict):
            self.turn_states = dict(cast("dict[str, Any]", states))
        elif isinstance(meta.get(TURN_STATE), dict):
            self.turn_states = {"": meta[TURN_STATE]}

    async def _replay(self, ws: Any, has: int) -> bool:
        """Send again what the server did not get; ``False`` if that is no longer known."""
        if has < 0 or has > self._sent_count:
            return False
        missing = [text for number, text in self._sent if number > has]
        if len(missing) < self._sent_count - has:
            return False  # some of it has left the log
        try:
            for text in missing:
                await ws.send(text)
        except self._errors.ConnectionClosed:
            return False
        return True

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._watchdog is not None:
            self._watchdog.cancel()
        if self._end is not None and self.connection_id is not None:
            # A resumable connection outlives its socket on the server: say it is over.
            with contextlib.suppress(Exception):
                await self._end(self.connection_id)
        try:
            await self._ws.close()
        except Exception:  # the socket may already be gone
            pass
        # When the server closed the TCP connection first (hypercorn does, after the
        # close handshake), Python 3.10's TLS transport is never marked closed and
        # warns when collected; closing it again is harmless.
        transport = getattr(self._ws, "transport", None)
        if transport is not None:
            transport.close()


class _Control(msgspec.Struct):
    method: Any = None
    params: Any = None


_control_decoder = msgspec.json.Decoder(_Control)


def _control(message: bytes) -> tuple[str, dict[str, Any]] | None:
    """``(method, params)`` of a ``stream/resumed`` or ``stream/resume_failed``, else None."""
    try:
        found = _control_decoder.decode(message)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if found.method not in (RESUMED, RESUME_FAILED) or not isinstance(found.params, dict):
        return None
    return found.method, cast("dict[str, Any]", found.params)


async def connect_websocket(
    url: str,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    open_timeout: float | None = 30.0,
    ssl: ssl_module.SSLContext | None = None,
    compression: bool = False,
    cookies: Any = None,
    resume: bool = False,
    resume_within: float = 30.0,
) -> WebSocketTransport:
    """Open ``url`` (``ws://host:port/acp`` or ``wss://``) and return its transport.

    ``token`` is sent as ``Authorization: Bearer TOKEN`` on the upgrade request
    (what ``acp serve`` expects); ``headers`` go there too (another scheme,
    say); ``ssl`` is a context trusting a private CA for ``wss://``.
    ``compression=True`` offers per-message deflate; it is off by default
    because it costs more CPU per ACP message than it saves on fast links.
    Cookies in ``cookies`` (an ``httpx.Cookies``, shared with a later upgrade
    to return what this one set) go on the upgrade request, and the cookies
    the server sets in its answer are added to it (RFD). ``resume=True`` asks
    an acpwire server to keep the connection when the socket drops and resumes
    it (see :class:`WebSocketTransport`); closing the transport then ends the
    connection on the server with ``DELETE``. Use the
    result with :class:`~acpwire.client.connection.ClientSideConnection` or
    ``ToolkitClient.connect(...)``; send ``initialize`` first.
    """
    client, errors = _websockets()
    options: dict[str, Any] = {} if ssl is None else {"ssl": ssl}
    jar = cookie_jar(cookies)
    base = auth_headers(token, headers)

    async def open_socket(extra: Mapping[str, str]) -> Any:
        upgrade = {**base, **extra}
        cookie = cookie_header(jar, url)
        if cookie:
            upgrade["Cookie"] = cookie
        ws = await client.connect(
            url,
            create_connection=_pushing_connection(),
            additional_headers=upgrade,
            max_size=max_message_size,
            open_timeout=open_timeout,
            compression="deflate" if compression else None,
            **options,
        )
        if ws.response is not None:
            keep_cookies(jar, url, ws.response.headers.raw_items())
        return ws

    async def end(connection_id: str) -> None:
        import httpx

        verify: Any = ssl if ssl is not None else True
        async with httpx.AsyncClient(verify=verify, cookies=jar, timeout=5.0) as http:
            await http.delete(_http_url(url), headers={**base, CONNECTION_ID: connection_id})

    try:
        ws = await open_socket({"Last-Event-ID": "0"} if resume else {})
    except (OSError, TimeoutError, errors.InvalidHandshake) as exc:
        raise ConnectionClosedError(f"cannot connect to {url}: {exc}", broken=True) from exc
    response = ws.response
    connection_id = response.headers.get(CONNECTION_ID) if response is not None else None
    return WebSocketTransport(
        ws,
        connection_id=connection_id,
        cookies=jar,
        reopen=open_socket if resume else None,
        end=end if resume else None,
        resume_within=resume_within,
    )


def _http_url(url: str) -> str:
    """The http(s) URL cookies are scoped to for a ws(s) URL (``wss`` is secure)."""
    scheme, _, rest = url.partition("://")
    return {"ws": "http", "wss": "https"}.get(scheme.lower(), scheme) + "://" + rest


def cookie_jar(cookies: Any = None) -> Any:
    """``cookies`` if given, else a new ``httpx.Cookies``."""
    import httpx

    return cookies if cookies is not None else httpx.Cookies()


def cookie_header(jar: Any, url: str) -> str | None:
    """The ``Cookie`` header ``jar`` sends to ``url`` (domain, path, expiry, Secure applied)."""
    import httpx

    request = httpx.Request("GET", _http_url(url))
    jar.set_cookie_header(request)
    value: str | None = request.headers.get("cookie")
    return value


def keep_cookies(jar: Any, url: str, headers: Any) -> None:
    """Add the cookies of an upgrade answer (its header pairs) to ``jar``."""
    import httpx

    request = httpx.Request("GET", _http_url(url))
    jar.extract_cookies(httpx.Response(101, headers=list(headers), request=request))
