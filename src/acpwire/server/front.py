"""The listening socket of ``acp serve``: WebSocket upgrades served here, the rest by hypercorn.

Why: hypercorn carries every WebSocket frame through a read task, its ASGI queue,
wsproto and a locked write (about four event-loop turns each way), most of an ACP
round trip (benchmarks/README.md). Here an upgrade is served on the ``websockets``
package's sans-I/O protocol right on the socket's asyncio protocol: a frame is parsed
in ``data_received`` and handed to the endpoint's waiting task, and written at once.

Nothing is decided here. The upgrade goes to the same ASGI app as a ``websocket``
scope, so the security middleware (Host, Origin, token), limits, resume and close
codes are those of a WebSocket hypercorn serves; a refusal uses the ASGI
``websocket.http.response`` extension, as under hypercorn.

Every other connection goes to hypercorn with the bytes already read (HTTP/1.1 other
than an upgrade, HTTP/2, TLS that chose ``h2``, what is not HTTP). A WebSocket that
reaches hypercorn (an upgrade after other requests on a connection, or RFC 8441 over
HTTP/2, not offered) is refused with 400: the rules below hold only here.

The rules hypercorn follows are kept (:mod:`.runner` sets them): a request head has
``header_timeout`` seconds and 16 KiB to arrive; an incoming message larger than
``max_message_size`` closes the socket with 1009; per-message deflate only when
compression is on; no pings from the server, but for ``acp serve --resumable``'s
keepalive (:meth:`WebSocket.ping_now`). Back-pressure both ways: reading pauses
while the endpoint has :data:`READ_AHEAD` messages it has not taken, and a send
waits while the socket's write buffer is above its high-water mark.

Rules the front adds, for every connection whichever side serves it:

* **Strangers are capped.** A connection counts as *waiting* from accept until a
  request on it passes the security middleware (:data:`~.security.ADMIT`). At most
  ``max_waiting`` connections wait at once, and ``max_waiting_per_address`` from one
  peer address; past either, the oldest waiting one is closed. Idle sockets opened by
  someone without a token cannot fill the descriptor table, nor the listen backlog
  that authenticated clients queue in.
* **Heads over 16 KiB get 431**, also when the whole head came in one read (hypercorn's
  own limit only counts a head still incomplete) and over HTTP/2.
* **A closed connection lingers.** When hypercorn closes a connection whose client is
  still sending (a body refused with 413 or 401 before it was read), the socket is
  half-closed and what comes in is read and dropped for up to :data:`~.lingering.LINGER` seconds:
  closing a socket with unread data sends a reset, which can destroy the answer before
  the client reads it.
* **Pongs are bounded.** A WebSocket client that pings and does not read makes the
  server write pongs into a buffer nobody empties: while the socket is over its
  high-water mark, pongs count against :data:`PONG_BUDGET` bytes, past which the
  socket is closed with 1008.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from http import HTTPStatus
from typing import Any, cast
from urllib.parse import unquote

from .._tasks import TaskSet
from .limits import Limits
from .lingering import Lingering, LingeringStream
from .security import ADMIT, Message, Receive, Scope, Send, refuse

log = logging.getLogger("acpwire.server.http")

ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
HandOff = Callable[[ASGIApp, asyncio.StreamReader, asyncio.StreamWriter], Coroutine[Any, Any, None]]
"""Serves a connection the front does not: the ASGI app to call for its requests (the
front's, which knows the connection), then the stream pair, as ``asyncio.start_server``
would pass it."""

HEAD_LIMIT = 16 * 1024
"""Bytes a request head may take (hypercorn's ``h11_max_incomplete_size`` here)."""
READ_AHEAD = 10
"""Messages received and not yet taken by the endpoint before reading pauses: what
hypercorn's ASGI queue holds (``max_app_queue_size``), so a client that sends faster
than its agent takes holds at most this many messages (each up to the size limit),
plus what one read of the socket brought, in the server's memory."""
DIRECT = "acpwire.direct"
"""The scope extension of a WebSocket served here: ``{"socket": WebSocket}``. The
endpoint may take messages with :meth:`WebSocket.deliver_to` and write them with
:meth:`WebSocket.send_text_now` instead of ASGI's receive and send: no task turn of
its own between the socket and the agent, either way."""
CLOSE_TIMEOUT = 5.0
"""Seconds a client has to answer our close frame before the socket is dropped."""
READ_SIZE = 64 * 1024
"""Bytes one read of a WebSocket's socket takes, into a buffer all of a front's
sockets share (the read is copied out at once). asyncio's own reads allocate
256 KiB each: with glibc an ``mmap``, ``mremap`` and ``munmap`` per message."""
PONG_BUDGET = 256 * 1024
"""Bytes of pongs a WebSocket may owe a client that does not read (written while the
socket's buffer is over its high-water mark) before it is closed with 1008. A client
that reads owes nothing; the 100 connections one principal may open then hold at most
about 32 MiB of pongs and buffers in all."""

_WEBSOCKET_ALONE = "a WebSocket is served as the first request of an HTTP/1.1 connection"
"""The answer to an upgrade the front does not see (see :meth:`Front.app_for`)."""

_UPGRADE = re.compile(rb"\r\nupgrade:[ \t]*websocket[ \t]*\r\n", re.IGNORECASE)
_GET = b"GET "


class ClientDisconnected(OSError):
    """ASGI ``send`` on a WebSocket whose client is gone (ASGI 2.4 asks for an OSError)."""


class Front:
    """What accepts the connections of one endpoint (see the module docstring).

    ``app`` serves the WebSocket upgrades; ``hand_off`` serves any other connection
    (see :data:`HandOff`). ``max_waiting`` and ``max_waiting_per_address`` cap the
    connections no request has been admitted on yet.
    """

    def __init__(
        self,
        app: ASGIApp,
        hand_off: HandOff,
        *,
        header_timeout: float,
        max_message_size: int,
        compression: bool,
        max_waiting: int = Limits.max_waiting_connections,
        max_waiting_per_address: int = Limits.max_waiting_per_address,
    ) -> None:
        self.app = app
        self.hand_off = hand_off
        self.header_timeout = header_timeout
        self.max_message_size = max_message_size
        self.compression = compression
        self.max_waiting = max_waiting
        self.max_waiting_per_address = max_waiting_per_address
        self.sockets: set[WebSocket] = set()
        self.handed_off = TaskSet(log)
        """The connections served by ``hand_off``: waited for (not cancelled) on close."""
        self.read_buffer = memoryview(bytearray(READ_SIZE))
        """Where the WebSockets' reads land; see :data:`READ_SIZE`."""
        self.waiting: dict[Arrival, None] = {}
        """Connections not admitted yet, oldest first."""
        self._waiting_from: dict[str, dict[Arrival, None]] = {}
        self.shed = 0
        """Waiting connections closed to make room (for logs and tests)."""

    def protocol(self) -> asyncio.Protocol:
        """A protocol for one accepted connection (``loop.create_server``'s factory)."""
        return _Sniffer(self)

    # -- connections not admitted yet ---------------------------------------------------

    def arrived(self, arrival: Arrival) -> None:
        """Count a new connection as waiting; close the oldest waiting ones past a cap."""
        same = self._waiting_from.setdefault(arrival.address, {})
        same[arrival] = None
        self.waiting[arrival] = None
        if len(same) > self.max_waiting_per_address:
            self._shed(next(iter(same)))
        if len(self.waiting) > self.max_waiting:
            self._shed(next(iter(self.waiting)))

    def settled(self, arrival: Arrival) -> None:
        """``arrival`` is admitted, or gone: it no longer waits."""
        if arrival in self.waiting:
            del self.waiting[arrival]
            same = self._waiting_from[arrival.address]
            del same[arrival]
            if not same:
                del self._waiting_from[arrival.address]

    def _shed(self, arrival: Arrival) -> None:
        self.settled(arrival)
        self.shed += 1
        log.info("closed a connection from %s: too many connections waiting", arrival.address)
        arrival.transport.abort()

    def app_for(self, arrival: Arrival) -> ASGIApp:
        """The ASGI app for the requests of one connection: the head size check, then
        :attr:`app` with the :data:`~.security.ADMIT` extension for this connection."""
        app = self.app
        admit = {"admit": arrival.admit}

        async def serve(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] in ("http", "websocket") and _head_size(scope) > HEAD_LIMIT:
                await refuse(scope, receive, send, 431, "request head too large")
                return
            extensions = scope.get("extensions") or {}
            if scope["type"] == "websocket" and DIRECT not in extensions:
                # hypercorn's: over HTTP/2 (RFC 8441, not offered: hypercorn_hooks.py), or an upgrade
                # after other requests on one HTTP/1.1 connection. Only this front's
                # WebSockets bound what a client that does not read can cost (PONG_BUDGET).
                await refuse(scope, receive, send, 400, _WEBSOCKET_ALONE)
                return
            await app({**scope, "extensions": {**extensions, ADMIT: admit}}, receive, send)

        return serve

    def serve_stream(
        self, arrival: Arrival, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.handed_off.spawn(
            self.hand_off(self.app_for(arrival), reader, writer),
            name=f"HTTP connection from {arrival.address}",
        )

    async def wait_closed(self, timeout: float) -> None:
        """Wait up to ``timeout`` for every connection to end, then drop the WebSockets left."""
        tasks = [*self.handed_off, *(ws.task for ws in self.sockets if ws.task is not None)]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
        for ws in list(self.sockets):
            ws.abort()


class Arrival:
    """One accepted connection, as the front counts it (see :meth:`Front.arrived`)."""

    __slots__ = ("address", "front", "transport")

    def __init__(self, front: Front, transport: asyncio.Transport) -> None:
        self.front = front
        self.transport = transport
        peer = _address(transport.get_extra_info("peername"))
        self.address = peer[0] if peer is not None else ""

    def admit(self) -> None:
        """A request on this connection passed the security checks."""
        self.front.settled(self)


class _Sniffer(asyncio.Protocol):
    """Reads a connection's first request head to see whether it is a WebSocket upgrade."""

    def __init__(self, front: Front) -> None:
        self.front = front
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.arrival: Arrival | None = None
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.arrival = Arrival(self.front, transport)
        self.front.arrived(self.arrival)
        tls = transport.get_extra_info("ssl_object")
        if tls is not None and tls.selected_alpn_protocol() == "h2":
            self._hand_off()
            return
        loop = asyncio.get_running_loop()
        self.timer = loop.call_later(self.front.header_timeout, self._too_slow)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        if not (buffer.startswith(_GET) or _GET.startswith(buffer)):
            self._hand_off()  # POST, DELETE, h2c's preface, not HTTP: all hypercorn's
            return
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(buffer) > HEAD_LIMIT:
                self._hand_off()  # hypercorn answers a head that is too large
            return
        head = bytes(buffer[: end + 2])
        first_line = head[: head.find(b"\r\n")]
        if first_line.endswith(b" HTTP/1.1") and _UPGRADE.search(head):
            self._upgrade()
        else:
            self._hand_off()

    def eof_received(self) -> bool | None:
        return None  # a head cut short: close

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        if self.arrival is not None:
            self.front.settled(self.arrival)
        if self.transport is not None:
            self.transport.close()  # a no-op, except on Python 3.10's TLS (LingeringStream's too)

    def _stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _too_slow(self) -> None:
        self.timer = None
        if self.transport is not None:
            self.transport.close()

    def _hand_off(self) -> None:
        self._stop_timer()
        transport, arrival = self.transport, self.arrival
        assert transport is not None and arrival is not None
        reader = asyncio.StreamReader(limit=2**16)
        stream = LingeringStream(
            reader,
            transport,
            lambda r, w: self.front.serve_stream(arrival, r, w),
            lambda: self.front.settled(arrival),
        )
        transport.set_protocol(stream)
        stream.connection_made(Lingering(transport, stream))
        if self.buffer:
            reader.feed_data(bytes(self.buffer))

    def _upgrade(self) -> None:
        self._stop_timer()
        transport, arrival = self.transport, self.arrival
        assert transport is not None and arrival is not None
        ws = WebSocket(self.front, transport, arrival)
        transport.set_protocol(ws)
        ws.data_received(bytes(self.buffer))


class WebSocket(asyncio.BufferedProtocol):
    """One WebSocket served to the ASGI app: ``websockets``' sans-I/O protocol on the socket."""

    def __init__(self, front: Front, transport: asyncio.Transport, arrival: Arrival) -> None:
        from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory
        from websockets.server import ServerProtocol

        self.front = front
        self.transport = transport
        self.arrival = arrival
        self.protocol = ServerProtocol(
            max_size=front.max_message_size,
            extensions=[ServerPerMessageDeflateFactory()] if front.compression else None,
        )
        self.task: asyncio.Task[None] | None = None
        self._loop = asyncio.get_running_loop()
        self._response: Any = None
        """The 101 answer prepared by the handshake check, sent on ``websocket.accept``."""
        self._accepted = False
        self._answered = False
        """An HTTP answer (101 or a refusal) has been sent."""
        self._refusal: tuple[int, list[tuple[bytes, bytes]], bytearray] | None = None
        self._incoming: deque[Message] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._paused_reading = False
        self._drained: asyncio.Future[None] | None = None
        self._pongs_owed = 0
        """Bytes of pongs written since the socket's buffer went over its high-water mark."""
        self._gone: Message | None = None
        """The disconnect message, once the client is gone."""
        self._fragments: list[bytes] = []
        self._fragment_text = False
        self._close_timer: asyncio.TimerHandle | None = None
        self._sink: Callable[[bytes], bool] | None = None
        front.sockets.add(self)

    # -- asyncio.BufferedProtocol ------------------------------------------------------

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.front.read_buffer

    def buffer_updated(self, nbytes: int) -> None:
        # The buffer is shared: what was read is copied out before anything else runs.
        self.data_received(bytes(self.front.read_buffer[:nbytes]))

    def data_received(self, data: bytes) -> None:
        self.protocol.receive_data(data)
        self._events()

    def eof_received(self) -> bool | None:
        self.protocol.receive_eof()
        self._events()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.front.sockets.discard(self)
        self.front.settled(self.arrival)
        self.transport.close()  # a no-op, except on Python 3.10's TLS (LingeringStream's too)
        if self._close_timer is not None:
            self._close_timer.cancel()
        self._disconnected(1006)  # a no-op after a close frame: that one said the code
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        if self._drained is None or self._drained.done():
            self._drained = self._loop.create_future()

    def resume_writing(self) -> None:
        self._pongs_owed = 0
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def abort(self) -> None:
        self.transport.abort()

    # -- from the socket -----------------------------------------------------------------

    def _events(self) -> None:
        from websockets.frames import Frame, Opcode
        from websockets.http11 import Request

        for event in self.protocol.events_received():
            if isinstance(event, Frame):
                opcode = event.opcode
                if opcode is Opcode.TEXT or opcode is Opcode.BINARY:
                    if event.fin:
                        self._message(bytes(event.data), opcode is Opcode.TEXT)
                    else:
                        self._fragments = [bytes(event.data)]
                        self._fragment_text = opcode is Opcode.TEXT
                elif opcode is Opcode.CONT:
                    self._fragments.append(bytes(event.data))
                    if event.fin:
                        data = b"".join(self._fragments)
                        self._fragments = []
                        self._message(data, self._fragment_text)
                elif opcode is Opcode.CLOSE:
                    rcvd = self.protocol.close_rcvd
                    self._disconnected(rcvd.code if rcvd is not None else 1005)
                elif opcode is Opcode.PING:
                    drained = self._drained
                    if drained is not None and not drained.done():
                        self._pongs_owed += 2 + len(event.data)  # the pong websockets queued
            elif isinstance(event, Request):
                self._handshake(event)
        if self._pongs_owed > PONG_BUDGET:
            self._pongs_owed = 0
            log.info(
                "closed the WebSocket of %s (1008): it pings and does not read",
                self.arrival.address,
            )
            self.protocol.fail(1008, "pings faster than the pongs are read")
            self._disconnected(1008)
        self._flush()

    def _handshake(self, request: Any) -> None:
        response = self.protocol.accept(request)
        if response.status_code != 101:
            # Not a valid WebSocket handshake: answered here, as hypercorn would.
            self.protocol.send_response(response)
            self._answered = True
            return
        self._response = response
        self._push({"type": "websocket.connect"})
        self.task = self._loop.create_task(self._run(self._scope(request)))

    def _scope(self, request: Any) -> Scope:
        target: str = request.path
        path, _, query = target.partition("?")
        transport = self.transport
        tls = transport.get_extra_info("ssl_object") is not None
        headers = [
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in request.headers.raw_items()
        ]
        offered = request.headers.get_all("Sec-WebSocket-Protocol")
        return {
            "type": "websocket",
            "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": "1.1",
            "scheme": "wss" if tls else "ws",
            "path": unquote(path),
            "raw_path": path.encode("latin-1"),
            "query_string": query.encode("latin-1"),
            "root_path": "",
            "headers": headers,
            "client": _address(transport.get_extra_info("peername")),
            "server": _address(transport.get_extra_info("sockname")),
            "subprotocols": [p.strip() for value in offered for p in value.split(",") if p.strip()],
            "extensions": {"websocket.http.response": {}, DIRECT: {"socket": self}},
        }

    def _message(self, data: bytes, text: bool) -> None:
        if not text:
            self._push({"type": "websocket.receive", "bytes": data})
            return
        try:
            decoded = data.decode("utf-8")
        except UnicodeDecodeError:
            self.protocol.fail(1007, "invalid UTF-8 in a text frame")
            self._disconnected(1007)
            return
        sink, waiter = self._sink, self._waiter
        if (
            sink is not None
            and waiter is not None
            and not waiter.done()
            and not self._incoming
            and self._gone is None
        ):
            # The endpoint waits for a message and none is queued: it may take this one
            # here, in order, without a turn of its task.
            try:
                if sink(data):
                    return
            except Exception:
                log.exception("the WebSocket endpoint failed on a message")
                self.protocol.fail(1011, "internal error")
                self._disconnected(1011)
                return
        self._push({"type": "websocket.receive", "text": decoded})

    def _push(self, message: Message) -> None:
        if self._gone is not None:
            return
        self._incoming.append(message)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if len(self._incoming) >= READ_AHEAD and not self._paused_reading:
            self._paused_reading = True
            self.transport.pause_reading()

    def _disconnected(self, code: int) -> None:
        if self._gone is not None:
            return
        gone: Message = {"type": "websocket.disconnect", "code": code}
        self._push(gone)
        self._gone = gone
        if self._paused_reading and not self.transport.is_closing():
            self._paused_reading = False
            self.transport.resume_reading()

    # -- to the socket -------------------------------------------------------------------

    def _flush(self) -> None:
        transport = self.transport
        ending = False
        for data in self.protocol.data_to_send():
            if data:
                transport.write(data)
            elif transport.can_write_eof():
                # websockets' end-of-stream marker: the server ends the TCP connection. By
                # half-closing, then reading (websockets drops it) until the client closes
                # too: a socket closed with unread data sends a reset, which can destroy
                # the close frame before the client reads it.
                transport.write_eof()
                ending = True
            else:
                transport.close()
        if (ending or self.protocol.close_expected()) and self._close_timer is None:
            self._close_timer = self._loop.call_later(CLOSE_TIMEOUT, transport.abort)

    # -- the ASGI side -------------------------------------------------------------------

    async def _run(self, scope: Scope) -> None:
        try:
            await self.front.app_for(self.arrival)(scope, self._receive, self._send)
        except Exception:
            log.exception("the WebSocket endpoint failed")
            self._end(1011)
        else:
            self._end(1000)
        finally:
            self.front.sockets.discard(self)

    def _end(self, code: int) -> None:
        """The app returned: refuse the upgrade if it never answered, else close."""
        from websockets.protocol import State

        if self.transport.is_closing():
            return
        if not self._answered:
            status = HTTPStatus.INTERNAL_SERVER_ERROR if code == 1011 else HTTPStatus.FORBIDDEN
            self._answer(self.protocol.reject(status, status.phrase))
        elif self._accepted and self.protocol.state is State.OPEN:
            self.protocol.send_close(code)
            self._flush()

    def _answer(self, response: Any) -> None:
        from websockets.protocol import State

        self._answered = True
        if self.protocol.state is State.CONNECTING:  # else the client left before the answer
            self.protocol.send_response(response)
            self._flush()

    async def _receive(self) -> Message:
        incoming = self._incoming
        while not incoming:
            if self._gone is not None:
                return self._gone
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        message = incoming.popleft()
        if self._paused_reading and len(incoming) <= READ_AHEAD // 2:
            self._paused_reading = False
            self.transport.resume_reading()
        return message

    def deliver_to(self, sink: Callable[[bytes], bool] | None) -> None:
        """While set, a text message that arrives when the endpoint waits in ``receive``
        with nothing queued goes to ``sink(data)`` first (see :data:`DIRECT`); when that
        returns ``False`` it is queued for ``receive`` as usual."""
        self._sink = sink

    def send_text_now(self, data: bytes) -> bool:
        """Send ``data`` as a text frame at once, outside ASGI (see :data:`DIRECT`):
        ``False``, nothing sent, when the socket is not open, is waiting to drain, or
        ``data`` is not UTF-8 (the ASGI path sends that one, repaired)."""
        if not self._accepted or self._gone is not None or self.transport.is_closing():
            return False
        drained = self._drained
        if drained is not None and not drained.done():
            return False
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
        self.protocol.send_text(data)
        self._flush()
        return True

    def ping_now(self) -> bool:
        """Send a Ping frame (``acp serve --resumable``'s keepalive); ``False``, nothing
        sent, when the socket is not open or is waiting to drain."""
        from websockets.protocol import State

        if not self._accepted or self._gone is not None or self.transport.is_closing():
            return False
        drained = self._drained
        if (drained is not None and not drained.done()) or self.protocol.state is not State.OPEN:
            return False
        self.protocol.send_ping(b"")
        self._flush()
        return True

    async def _send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "websocket.send":
            if not self._accepted or self._gone is not None or self.transport.is_closing():
                raise ClientDisconnected("the WebSocket is closed")
            text = message.get("text")
            if text is not None:
                self.protocol.send_text(text.encode("utf-8"))
            else:
                self.protocol.send_binary(message.get("bytes") or b"")
            self._flush()
            drained = self._drained
            if drained is not None and not drained.done():
                await drained
        elif kind == "websocket.accept":
            self._accept(message)
        elif kind == "websocket.close":
            self._close(message)
        elif kind == "websocket.http.response.start":
            if self._answered or self._refusal is not None:
                raise RuntimeError("the WebSocket handshake was already answered")
            self._refusal = (int(message["status"]), list(message.get("headers", ())), bytearray())
        elif kind == "websocket.http.response.body":
            if self._refusal is None or self._answered:
                raise RuntimeError("websocket.http.response.body before its start")
            status, headers, body = self._refusal
            body += message.get("body", b"")
            if not message.get("more_body", False):
                self._answer(_http_response(status, headers, bytes(body)))
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r} on a WebSocket")

    def _accept(self, message: Message) -> None:
        if self._answered:
            raise RuntimeError("the WebSocket handshake was already answered")
        response = self._response
        for name, value in message.get("headers", ()):
            response.headers[name.decode("latin-1")] = value.decode("latin-1")
        subprotocol = message.get("subprotocol")
        if subprotocol is not None:
            response.headers["Sec-WebSocket-Protocol"] = subprotocol
        self._accepted = True
        self._answer(response)

    def _close(self, message: Message) -> None:
        from websockets.protocol import State

        if not self._answered:
            # ASGI: closing before accepting refuses the upgrade with 403.
            self._answer(self.protocol.reject(HTTPStatus.FORBIDDEN, "Forbidden\n"))
            return
        if self.protocol.state is State.OPEN and not self.transport.is_closing():
            self.protocol.send_close(int(message.get("code", 1000)), message.get("reason") or "")
            self._flush()


def _http_response(status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> Any:
    from websockets.datastructures import Headers
    from websockets.http11 import Response

    pairs = Headers()
    for name, value in headers:
        pairs[name.decode("latin-1")] = value.decode("latin-1")
    if "Content-Length" not in pairs:
        pairs["Content-Length"] = str(len(body))
    pairs["Connection"] = "close"
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = ""
    return Response(status, reason, pairs, body)


def _head_size(scope: Scope) -> int:
    """About the bytes of the request head that made ``scope`` (request line and headers)."""
    size = 32 + len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
    for name, value in scope.get("headers", ()):
        size += len(name) + len(value) + 4
    return size


def _address(info: object) -> tuple[str, int] | None:
    """``(host, port)`` of a socket address (IPv6 ones have two more fields)."""
    if isinstance(info, tuple):
        fields = cast("tuple[object, ...]", info)
        if len(fields) >= 2 and isinstance(fields[1], int):
            return str(fields[0]), fields[1]
    return None
