"""The ``/acp`` endpoint over a WebSocket: the upgrade, resuming, and one socket's pump.

The HTTP surface of a WebSocket (the ASGI ``websocket`` protocol) lives here;
every decision about the connection is the host's and the connection's
(:mod:`.host`, :mod:`.connection`). Rules it keeps:

* **The agent starts on ``initialize``.** A new socket's first message must be
  ``initialize``, within ``Limits.handshake_timeout`` (else close 1008); the
  caps on connections and agents are checked at the upgrade and again then
  (close 1013).
* **Every frame through the one admission.** A text frame is read strictly and
  admitted (:meth:`~.connection.RemoteConnection.admit`); one that cannot be
  read is answered on the socket. Binary frames are ignored (RFD).
* **A direct path, and the same rules on it.** A socket offered in the
  :data:`~.front.DIRECT` scope extension (:class:`DirectSocket`) hands each
  frame to :meth:`~.connection.RemoteConnection.try_admit` in its own callback,
  and the connection's stream writes to it at once while nothing is queued
  (:attr:`~.outbox.Outbox.write_now`): a round trip takes two event-loop turns
  on the server. What cannot be done at once (a frame to refuse, an owner to
  look up, a full queue, a socket still draining) takes the ASGI path, in
  order.
* **Resume.** A client that sent ``Last-Event-ID`` on the upgrade can
  re-attach a dropped socket to its connection for ``Limits.resume_timeout``
  seconds (docs/remote.md, "Reconnect and resume"): it gets what it missed
  from the stream's log, and the 101 tells it how many of its frames the
  server took. A resume that comes too late is refused (404, 410), one for a
  socket still in use waits for it to let go or is refused (409).
* **Resume by cursor** (``--resumable``, :mod:`.resumable`). An upgrade
  carrying ``Acp-Connection-Id`` (and no ``Last-Event-ID``) resumes: its first
  frame must be ``stream/resume`` with the cursor of the last message the
  client has; the socket gets the rest, then ``stream/resumed`` (the turn
  states, and how many of the client's frames the server took), then live
  messages; or ``stream/resume_failed`` with a reason, and the close. The
  server pings every keepalive interval.
* **How a socket closes says how the connection ended**: 1000 for an end the
  server or client chose, 1001 at shutdown, 1011 when the agent failed, 1008
  or 1013 for a refusal, and 1000 "resumed" for a socket another one replaced.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Protocol, cast, runtime_checkable

import msgspec

from .._waits import within
from ..protocol.cursors import (
    CONNECTION_GONE,
    RESUME,
    RESUME_FAILED,
    STREAM_IN_USE,
    TURN_STATES,
    UNKNOWN_CURSOR,
    control,
)
from ..protocol.errors import ConnectionClosedError
from .admission import ClientMessage, Unreadable, read_client_message
from .connection import RemoteConnection
from .front import DIRECT
from .headers import (
    CONNECTION_HEADER,
    KEEPALIVE_HEADER,
    header,
    keepalive_asked,
    last_event_id,
    peer,
)
from .host import RemoteHost
from .outbox import Replay
from .security import Receive, Scope, Send, refuse

log = logging.getLogger("acpwire.server")

# WebSocket close codes (RFC 6455 section 7.4.1).
WS_NORMAL = 1000
WS_GOING_AWAY = 1001
WS_POLICY = 1008
WS_INTERNAL_ERROR = 1011
WS_TRY_AGAIN_LATER = 1013


@runtime_checkable
class DirectSocket(Protocol):
    """What the endpoint uses of a socket offered in the :data:`~.front.DIRECT` scope
    extension (front.py's ``WebSocket``): messages taken in the socket's callback, and
    written without waiting. Anything else in that place is ignored."""

    def deliver_to(self, sink: Callable[[bytes], bool] | None) -> None: ...

    def send_text_now(self, data: bytes) -> bool: ...

    def ping_now(self) -> bool: ...


async def serve_websocket(
    host: RemoteHost, scope: Scope, receive: Receive, send: Send, principal: str
) -> None:
    """Serve one WebSocket upgrade of ``principal``: a new connection, or a resume."""
    last = last_event_id(scope)
    resume_id = header(scope, CONNECTION_HEADER)
    if resume_id is not None and last is None and host.resumable:
        await _resume_by_cursor(host, scope, receive, send, principal, resume_id)
        return
    if resume_id is not None:
        await _resume(host, scope, receive, send, principal, resume_id, last)
        return
    first = await receive()
    if first["type"] != "websocket.connect":
        return
    refusal = host.refusal(principal, agent=False)
    if refusal is not None:
        log.info("refused a WebSocket from %s: %s", peer(scope), refusal)
        await send({"type": "websocket.accept"})
        await send({"type": "websocket.close", "code": WS_TRY_AGAIN_LATER, "reason": refusal})
        return
    conn = host.open("websocket", principal, peer(scope))
    # A client that sends Last-Event-ID (0 on a new connection) keeps count of what it
    # received and can resume: its connection outlives a dropped socket for a while.
    conn.resumable = conn.resumable or last is not None
    await conn.stream.attach(take_over=False, timeout=0)
    keepalive = _keepalive_header(scope, host)
    await send({"type": "websocket.accept", "headers": [*keepalive, _id_header(conn.id)]})
    await ClientSocket(host, conn, scope, receive, send, fresh=True, replay=[]).run()


async def _resume(
    host: RemoteHost,
    scope: Scope,
    receive: Receive,
    send: Send,
    principal: str,
    connection_id: str,
    last: int | None,
) -> None:
    """A client re-attaching a dropped WebSocket to its connection (docs/remote.md)."""
    conn = host.lookup(connection_id, principal)
    if conn is None or conn.mode != "websocket" or not conn.resumable or conn.ended:
        await refuse(scope, receive, send, 404, "unknown connection")
        return
    if last is None or last < 0 or conn.stream.replay_after(last) is None:
        await refuse(scope, receive, send, 410, "this connection can no longer be resumed")
        return
    if not await conn.stream.attach(take_over=True, timeout=host.limits.close_timeout):
        await refuse(scope, receive, send, 409, "the connection is still in use")
        return
    # Read once the old socket has let go (its writer may have sent more meanwhile).
    replay = conn.stream.replay_after(last)
    if replay is None:
        conn.stream.detach()
        await refuse(scope, receive, send, 410, "this connection can no longer be resumed")
        return
    if (await receive())["type"] != "websocket.connect":
        conn.stream.detach()
        return
    conn.resumed()
    log.info("connection %s resumed after event %d (%d to replay)", conn.id, last, len(replay))
    await send(
        {
            "type": "websocket.accept",
            "headers": [
                (CONNECTION_HEADER.encode(), conn.id.encode()),
                (b"last-event-id", str(conn.frames_in).encode()),
            ],
        }
    )
    await ClientSocket(host, conn, scope, receive, send, fresh=False, replay=replay).run()


class _Resume(msgspec.Struct):
    connectionId: Any = None  # the wire names
    streams: Any = None


class _ResumeFrame(msgspec.Struct):
    method: Any = None
    params: _Resume | None = None


_resume_frame = msgspec.json.Decoder(_ResumeFrame)


def _cursor(frame: _ResumeFrame, connection_id: str) -> str | None:
    """The connection stream's cursor in a ``stream/resume`` frame (``None``: not one, or
    for another connection or stream)."""
    params = frame.params
    if frame.method != RESUME or params is None or not isinstance(params.streams, list):
        return None
    if params.connectionId is not None and params.connectionId != connection_id:
        return None
    streams = cast("list[object]", params.streams)
    if len(streams) != 1 or not isinstance(streams[0], dict):
        return None
    stream = cast("dict[str, object]", streams[0])
    cursor = stream.get("cursor")
    if stream.get("sessionId") is not None or not isinstance(cursor, str):
        return None
    return cursor


async def _resume_by_cursor(
    host: RemoteHost, scope: Scope, receive: Receive, send: Send, principal: str, cid: str
) -> None:
    """(``--resumable``) A socket resuming connection ``cid`` by cursor: the upgrade is
    accepted, its first frame is ``stream/resume`` (see the module docstring)."""
    if (await receive())["type"] != "websocket.connect":
        return
    keepalive = _keepalive_header(scope, host)
    await send({"type": "websocket.accept", "headers": [*keepalive, _id_header(cid)]})

    async def fail(reason: str, text: str, turns: dict[str, Any] | None = None) -> None:
        params: dict[str, Any] = {"reason": reason, "message": text}
        if turns is not None:
            params["_meta"] = {TURN_STATES: turns}
        with contextlib.suppress(Exception):
            await send({"type": "websocket.send", "text": control(RESUME_FAILED, params).decode()})
            await send({"type": "websocket.close", "code": WS_NORMAL, "reason": "resume failed"})
        log.info("refused to resume connection %s: %s", cid, reason)

    try:
        message = await within(receive(), host.limits.handshake_timeout)
    except asyncio.TimeoutError:
        await fail(UNKNOWN_CURSOR, "stream/resume expected as the first message")
        return
    text = message.get("text") if message["type"] == "websocket.receive" else None
    if text is None:
        return
    try:
        cursor = _cursor(_resume_frame.decode(text), cid)
    except (msgspec.DecodeError, msgspec.ValidationError):
        cursor = None
    if cursor is None:
        await fail(UNKNOWN_CURSOR, "the first message must be stream/resume with a cursor")
        return
    conn = host.lookup(cid, principal)
    last = int(cursor) if cursor.isdigit() and len(cursor) < 19 else -1
    if conn is None and host.retention is not None:
        # Not here: maybe a dead worker's, kept in the store (.retention).
        orphan = await host.retention.orphan(cid, "", principal, "websocket", last)
        if isinstance(orphan, str):
            await fail(orphan, "cannot resume from there")
            return
        replay, turns = orphan
        with contextlib.suppress(Exception):
            for _, old in replay:
                await send({"type": "websocket.send", "text": old.decode("utf-8", "replace")})
        gone = "the worker that served this connection is gone; what it wrote was replayed"
        await fail(CONNECTION_GONE, gone, turns)
        return
    if conn is None or conn.mode != "websocket" or not conn.resumable or conn.ended:
        await fail(CONNECTION_GONE, "unknown connection")
        return
    found = conn.stream.resume_from(last)
    if isinstance(found, str):
        await fail(found, "cannot resume from there")
        return
    if not await conn.stream.attach(take_over=True, timeout=host.limits.close_timeout):
        await fail(STREAM_IN_USE, "the connection is still in use")
        return
    found = conn.stream.resume_from(last)  # once the old socket has let go
    if isinstance(found, str):
        conn.stream.detach()
        await fail(found, "cannot resume from there")
        return
    conn.resumed()
    log.info("connection %s resumed after cursor %s (%d to replay)", conn.id, cursor, len(found))
    after = conn.acknowledgment(conn.stream, received=conn.frames_in)
    socket = ClientSocket(host, conn, scope, receive, send, fresh=False, replay=found, after=after)
    await socket.run()


def _id_header(cid: str) -> tuple[bytes, bytes]:
    return (CONNECTION_HEADER.encode(), cid.encode())


def _keepalive_header(scope: Scope, host: RemoteHost) -> list[tuple[bytes, bytes]]:
    """(``--resumable``) The keepalive interval this socket keeps, as a header of the 101."""
    interval = keepalive_of(scope, host)
    if interval is None:
        return []
    return [(KEEPALIVE_HEADER.encode(), b"%g" % interval)]


def keepalive_of(scope: Scope, host: RemoteHost) -> float | None:
    """Seconds between this socket's pings (``--resumable`` only; the client may ask for
    another interval with ``Acp-Keepalive`` on the upgrade)."""
    return keepalive_asked(scope, host.keepalive) if host.resumable else None


class ClientSocket:
    """One accepted socket of a connection, pumped until the client leaves, the
    connection ends, or a resuming socket takes over (:meth:`run`)."""

    def __init__(
        self,
        host: RemoteHost,
        conn: RemoteConnection,
        scope: Scope,
        receive: Receive,
        send: Send,
        *,
        fresh: bool,
        replay: Replay,
        after: list[bytes] | None = None,
    ) -> None:
        self._host = host
        self._conn = conn
        self._receive = receive
        self._send = send
        self._fresh = fresh
        """A new connection's socket: its first message must be ``initialize``."""
        self._replay = replay
        """What a resuming client missed, written before anything else."""
        self._after = after or []
        """Written after the replay, before live messages (a resume's acknowledgment)."""
        self._keepalive = keepalive_of(scope, host)
        self._refused: tuple[int, str] | None = None
        """Why the socket closes, when the endpoint refused its client."""
        offered: object = (scope.get("extensions") or {}).get(DIRECT, {}).get("socket")
        self._direct = offered if isinstance(offered, DirectSocket) else None
        # Bound once: the socket and the stream are handed these and compared with them.
        self._take_now = self.take_now
        self._write_now = self.write_now

    async def run(self) -> None:
        conn = self._conn
        lingering = False
        pinging = None
        if self._keepalive is not None and self._direct is not None:
            pinging = asyncio.ensure_future(self._ping(self._direct, self._keepalive))
        try:
            async with conn.stream.writing(self._from_client(), self._to_client()) as tasks:
                reader, writer, taken = tasks
                if taken.done():
                    lingering = True  # another socket resumed this connection
                elif reader.done() and self._refused is None and conn.resumable and not conn.ended:
                    # The socket dropped: keep the connection for the client to resume.
                    lingering = True
                    conn.linger()
                else:
                    # The client left or was refused, or the connection ended on the
                    # server's side (then this keeps the reason it ended with).
                    await conn.terminate("client gone" if self._refused is None else "closed")
                    # Let the writer flush the last answers, if the client reads.
                    with contextlib.suppress(Exception):
                        limit = self._host.limits.close_timeout
                        await within(asyncio.shield(writer), limit)
        finally:
            if pinging is not None:
                pinging.cancel()
            if self._direct is not None:
                self._direct.deliver_to(None)
            if conn.stream.write_now is self._write_now:
                conn.stream.write_now = None
            conn.stream.detach()
            if not lingering:
                await conn.terminate()
        if lingering:
            with contextlib.suppress(Exception):
                await self._send(
                    {"type": "websocket.close", "code": WS_NORMAL, "reason": "resumed"}
                )
            return
        code, reason = self._refused or self._close_code()
        with contextlib.suppress(Exception):
            await self._send({"type": "websocket.close", "code": code, "reason": reason})

    @staticmethod
    async def _ping(socket: DirectSocket, interval: float) -> None:
        """(``--resumable``) A Ping every ``interval`` seconds: intermediaries see traffic,
        and a client that hears nothing for five intervals knows the path is dead."""
        while True:
            await asyncio.sleep(interval)
            socket.ping_now()

    def _close_code(self) -> tuple[int, str]:
        conn = self._conn
        if conn.failed:
            return WS_INTERNAL_ERROR, "the agent ended unexpectedly"
        if conn.end_reason == "shutdown":
            return WS_GOING_AWAY, "server shutting down"
        return WS_NORMAL, ""

    # -- from the client ---------------------------------------------------------------

    async def _frame(self) -> ClientMessage | Unreadable | None:
        """The next text frame, read; ``None`` when the client has gone."""
        while True:
            message = await self._receive()
            if message["type"] == "websocket.disconnect":
                return None
            text = message.get("text") if message["type"] == "websocket.receive" else None
            if text is None:
                continue  # binary frames are ignored (RFD)
            try:
                return read_client_message(text.encode("utf-8"))
            except Unreadable as exc:
                return exc

    async def _first_frame(self) -> ClientMessage | Unreadable | None:
        """A new socket's first frame, which starts the agent; ``None`` when the client
        has gone or was refused (:attr:`_refused`)."""
        host, conn = self._host, self._conn
        try:
            frame = await within(self._frame(), host.limits.handshake_timeout)
        except asyncio.TimeoutError:
            self._refused = (WS_POLICY, "initialize expected")
            return None
        if frame is None:
            return None
        if (
            not isinstance(frame, ClientMessage)
            or frame.kind != "request"
            or frame.method != "initialize"
        ):
            self._refused = (WS_POLICY, "initialize must be the first message")
            return None
        why = host.refusal(conn.principal, agent=True)
        if why is not None:
            self._refused = (WS_TRY_AGAIN_LATER, why)
            return None
        conn.start_agent()
        return frame

    async def _from_client(self) -> None:
        conn, direct = self._conn, self._direct
        frame = await (self._first_frame() if self._fresh else self._frame())
        while frame is not None:
            try:
                if isinstance(frame, Unreadable):
                    await conn.refuse(frame)
                else:
                    await conn.admit(frame)
            except ConnectionClosedError:
                return
            conn.frames_in += 1
            if direct is not None:
                direct.deliver_to(self._take_now)
            frame = await self._frame()

    def take_now(self, body: bytes) -> bool:
        """What :meth:`_from_client` does for a frame, when nothing in it has to wait
        (the socket's callback, :data:`~.front.DIRECT`); what it cannot read is left to
        :meth:`_from_client`, which answers it."""
        try:
            m = read_client_message(body)
        except Unreadable:
            return False
        conn = self._conn
        if not conn.try_admit(m):
            return False
        conn.frames_in += 1
        return True

    # -- to the client -----------------------------------------------------------------

    async def _to_client(self) -> None:
        send = self._send
        for _, old in self._replay:
            await send({"type": "websocket.send", "text": old.decode("utf-8", "replace")})
        for ack in self._after:
            await send({"type": "websocket.send", "text": ack.decode("utf-8", "replace")})
        box = self._conn.stream
        if self._direct is not None and box.keep is None:
            box.write_now = self._write_now
        queue = box.queue
        while True:
            message = await queue.get()
            if message is None:
                return
            taken = [box.take(message)]
            if box.keep is not None:
                # Kept in the shared store before the client has them: a batch at a time.
                while len(queue) and len(taken) < 256:
                    more = await queue.get()
                    if more is None:
                        break
                    taken.append(box.take(more))
                await box.kept(taken)
            for _, written in taken:
                await send({"type": "websocket.send", "text": written.decode("utf-8", "replace")})
                box.mark_written()

    def write_now(self, message: bytes) -> bool:
        """What :meth:`_to_client` does for a message, when the socket takes it at once."""
        direct = self._direct
        if direct is None:
            return False
        box = self._conn.stream
        _, written = box.take(message)
        if not direct.send_text_now(written):
            box.untake()
            return False
        return True
