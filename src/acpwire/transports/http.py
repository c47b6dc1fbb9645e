"""ACP over Streamable HTTP (client side): POST out, long-lived SSE streams in.

RFD streamable-http-websocket-transport: ``initialize`` is POSTed without
``Acp-Connection-Id`` and answered ``200`` with the JSON-RPC response and the
connection id in a header. Every later message is POSTed with that header (and
``Acp-Session-Id`` when it concerns a session) and answered ``202``; what the
agent sends arrives on GET SSE streams: one for the connection and one per
session, which this transport opens before its first message about the session.
DELETE ends the connection. Cookies set by the server are kept and returned.

Resuming (docs/remote.md): SSE events carry ids; a stream that breaks is opened
again with ``Last-Event-ID`` (events already delivered are skipped), and a POST
that fails on the network is sent again, for ``resume_within`` seconds. Past
that, or when the server cannot resume (``410``, or ``404`` after a restart;
``409`` with a reason from a server of the durable transport draft), the
transport ends broken. A server that advertises ``transport.resumable`` in its
``initialize`` answer (``acp serve --resumable``) is also watched: a stream
that carries nothing, not even a keepalive comment, for five of its keepalive
intervals is taken for dead and resumed; its ``stream/resumed``
acknowledgments stop here (their turn states are kept in
:attr:`HttpTransport.turn_states`).

Uses ``httpx`` (the ``remote`` extra), imported on first use; HTTP/2 (``http2=True``,
or ``None`` to fall back to HTTP/1.1) uses acpwire's own transport on the ``h2``
package (:mod:`._h2`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

import msgspec

from .._waits import within
from ..protocol.cursors import (
    CONNECTION_GONE,
    RESUME_FAILED,
    RESUMED,
    STREAM_IN_USE,
    TURN_STATE,
    TURN_STATES,
)
from ..protocol.errors import ConnectionClosedError, ErrorCode
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE, Oversize
from ..protocol.peek import SESSION_ATTACHING, NotAMessage, peek
from ._durable import GATEWAY_ERRORS, Durable, backoff_delays, refusal_reason, resumable_of

log = logging.getLogger("acpwire.transports.http")

INSTALL_HINT = "the HTTP transport needs the remote extra: pip install 'acpwire[remote]'"
CONNECTION_HEADER = "Acp-Connection-Id"
STILL_HELD = 409
"""What a resume is answered while the server has not yet let go of the request the
network broke under (it gives that one ``Limits.close_timeout`` to notice): not final, so
it is tried again, as a network failure is, for ``resume_within`` seconds."""
SESSION_HEADER = "Acp-Session-Id"
RETRY_HEADER = "Acp-Retry"
"""On a POST sent again after a network failure: acpwire's server then drops a request
it already answered instead of running it twice (other servers ignore the header)."""


def auth_headers(token: str | None, headers: Mapping[str, str] | None) -> dict[str, str]:
    """``headers`` plus ``Authorization: Bearer TOKEN`` when a token is given."""
    merged = dict(headers or {})
    if token is not None:
        merged["Authorization"] = f"Bearer {token}"
    return merged


def _httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return httpx


def _reason(response: Any) -> str:
    """What an error answer says: its JSON-RPC error's message, else the start of its body."""
    try:
        error: object = msgspec.json.decode(response.content).get("error")
        message: object = error.get("message") if isinstance(error, dict) else None
    except (msgspec.DecodeError, AttributeError):
        message = None
    return message if isinstance(message, str) else response.text[:200]


class _Broken:
    def __init__(self, error: ConnectionClosedError, *, gone: bool = False) -> None:
        self.error = error
        self.gone = gone
        """The server said the connection is gone (``connection_gone``), after a replay."""


def _not_after(cursor: str, last: str) -> bool:
    """Whether event ``cursor`` was delivered already, ``last`` being the last one: known
    only for acpwire's numbered cursors; an opaque one is taken as new."""
    return cursor.isdigit() and last.isdigit() and int(cursor) <= int(last)


class HttpTransport:
    """A :class:`~acpwire.transports.base.Transport` to an ACP Streamable HTTP endpoint."""

    def __init__(
        self,
        url: str,
        client: Any,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        inbox_size: int = 256,
        request_timeout: float = 120.0,
        resume_within: float = 30.0,
    ) -> None:
        self.url = url
        self.connection_id: str | None = None
        """The server's ``Acp-Connection-Id``, once ``initialize`` has been answered."""
        self.max_message_size = max_message_size
        self.cookies: Any = client.cookies
        """The cookie jar (``httpx.Cookies``): what the server set, sent back on every request."""
        self._client = client
        self._httpx = _httpx()
        self._timeout = request_timeout
        self._inbox: asyncio.Queue[bytes | Oversize | _Broken | None] = asyncio.Queue(inbox_size)
        self._streams: dict[str | None, asyncio.Task[None]] = {}
        self._stream_lock = asyncio.Lock()
        self._incoming: dict[str | int, str | None] = {}
        self._closed = False
        self._eof = False
        self._resume_within = resume_within
        self.resumes = 0
        """How many times a broken event stream was resumed (``Last-Event-ID``)."""
        self._last_ids: dict[str | None, str] = {}
        """Per stream, the id (the cursor) of the last event delivered."""
        self.durable: Durable | None = None
        """What the server's ``initialize`` answer advertised of ``transport.resumable``."""
        self.turn_states: dict[str, Any] = {}
        """(Durable) Turn states the last ``stream/resumed`` of each stream reported."""
        self._no_stream: set[str] = set()
        """Sessions whose stream the server refused (their messages come on the connection's)."""

    # -- sending ---------------------------------------------------------------------

    async def send(self, message: bytes) -> None:
        if self._closed:
            raise ConnectionClosedError("transport is closed")
        if self._eof:
            raise ConnectionClosedError("the server ended the connection")
        try:
            p = peek(message)
        except NotAMessage:
            await self._post_unparsed(message)
            return
        if self.connection_id is None:
            if p.method != "initialize" or p.id is None:
                raise ConnectionClosedError("initialize must be the first message over HTTP")
            await self._initialize(message)
            return
        if p.kind == "response":
            session = self._incoming.pop(p.id, None) if p.id is not None else None
        else:
            session = p.session_id
        headers = {"content-type": "application/json", CONNECTION_HEADER: self.connection_id}
        if session is not None:
            headers[SESSION_HEADER] = session
            if p.method not in SESSION_ATTACHING:
                await self._session_stream(session)
        response = await self._post(message, headers)
        status = response.status_code
        if status in (200, 202):
            if p.method in SESSION_ATTACHING and session is not None:
                await self._session_stream(session)
            return
        if status == 404 and (session is None or _connection_unknown(response.content)):
            # For a session-scoped message too: a POST retried on a server that restarted
            # (Acp-Retry) must end the connection, so that the session is re-attached,
            # not fail as if only the session were unknown. Whoever waits in receive()
            # learns it too (a reconnecting peer reconnects from there).
            gone = ConnectionClosedError("the server no longer knows this connection", broken=True)
            await self._inbox.put(_Broken(gone))
            raise gone
        text = response.text[:200]
        log.warning("POST answered %d: %s", status, text)
        if p.kind == "request" and p.id is not None:
            # 404 for a session-scoped message: the session is unknown on this connection.
            code = ErrorCode.RESOURCE_NOT_FOUND if status == 404 else ErrorCode.INTERNAL_ERROR
            error = {"code": int(code), "message": f"HTTP {status} from the ACP endpoint: {text}"}
            await self._inbox.put(
                msgspec.json.encode({"jsonrpc": "2.0", "id": p.id, "error": error})
            )

    async def _post_unparsed(self, message: bytes) -> None:
        """POST what is not a JSON-RPC message anyway (a bridge forwards what it gets): the
        server's JSON-RPC parse error comes back as the answer, as over stdio."""
        if self.connection_id is None:
            raise ConnectionClosedError("initialize must be the first message over HTTP")
        headers = {"content-type": "application/json", CONNECTION_HEADER: self.connection_id}
        response = await self._post(message, headers)
        if response.status_code in (200, 202):
            return
        try:
            answer = peek(response.content)
        except NotAMessage:
            log.warning("POST of a non-JSON-RPC message answered %d", response.status_code)
            return
        if answer.kind == "response" and answer.id is None:
            await self._inbox.put(response.content)

    async def _post(self, message: bytes, headers: Mapping[str, str], *, retry: bool = True) -> Any:
        """POST ``message``; a network failure is retried for ``resume_within`` seconds,
        marked with :data:`RETRY_HEADER` (acpwire's server drops a repeat of a request it
        has in flight or answered)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._resume_within
        delay = 0.1
        while True:
            if self._closed:  # closed while this POST waited to retry: the client is gone
                raise ConnectionClosedError("transport is closed")
            try:
                return await self._client.post(
                    self.url, content=message, headers=headers, timeout=self._timeout
                )
            except self._httpx.TransportError as exc:
                if not retry or self._closed or loop.time() >= deadline:
                    raise ConnectionClosedError(f"POST failed: {exc}", broken=True) from exc
                log.info("POST failed (%s); retrying", exc)
                headers = {**headers, RETRY_HEADER: "1"}
                await asyncio.sleep(min(delay, max(0.0, deadline - loop.time())))
                delay = min(delay * 2, 2.0)
            except self._httpx.HTTPError as exc:
                raise ConnectionClosedError(f"POST failed: {exc}", broken=True) from exc

    async def _initialize(self, message: bytes) -> None:
        # Not retried: a repeat could make a second connection.
        response = await self._post(message, {"content-type": "application/json"}, retry=False)
        if response.status_code != 200:
            raise ConnectionClosedError(
                f"initialize answered HTTP {response.status_code}: {_reason(response)}",
                broken=True,
            )
        connection_id = response.headers.get(CONNECTION_HEADER)
        if not connection_id:
            raise ConnectionClosedError(
                f"initialize answer had no {CONNECTION_HEADER}", broken=True
            )
        self.connection_id = connection_id
        self.durable = resumable_of(response.content)
        await self._ensure_stream(None)
        await self._inbox.put(response.content)

    # -- streams ---------------------------------------------------------------------

    async def _open_stream(self, session: str | None, last: str | None) -> Any:
        """GET the connection stream (``None``) or a session's; resume after event ``last``."""
        assert self.connection_id is not None
        headers = {"accept": "text/event-stream", CONNECTION_HEADER: self.connection_id}
        if session is not None:
            headers[SESSION_HEADER] = session
        if last is not None:
            headers["last-event-id"] = last
        httpx = self._httpx
        request = self._client.build_request(
            "GET", self.url, headers=headers, timeout=httpx.Timeout(self._timeout, read=None)
        )
        return await self._client.send(request, stream=True)

    async def _session_stream(self, session: str) -> None:
        """Open the session's stream before the first message about it goes out (the
        TypeScript SDK's server sends its updates there only; acpwire's sends them on the
        connection stream until then). Opened lazily, so that making a session costs
        one request, not two."""
        if session in self._streams or session in self._no_stream:
            return
        try:
            await self._ensure_stream(session)
        except ConnectionClosedError as exc:
            log.warning("cannot open the stream of session %s: %s", session, exc)

    async def _ensure_stream(self, session: str | None) -> None:
        """Open the connection stream (``None``) or a session's stream, once."""
        async with self._stream_lock:
            task = self._streams.get(session)
            if task is not None and not task.done():
                return
            try:
                response = await self._open_stream(session, None)
            except self._httpx.HTTPError as exc:
                raise ConnectionClosedError(
                    f"cannot open event stream: {exc}", broken=True
                ) from exc
            if response.status_code != 200:
                await response.aclose()
                if session is None:
                    raise ConnectionClosedError(
                        f"event stream answered HTTP {response.status_code}", broken=True
                    )
                # The server keeps no more session streams for this connection (or does
                # not know the session yet): its messages come on the connection stream.
                log.info("session %s stream answered HTTP %d", session, response.status_code)
                self._no_stream.add(session)
                return
            self._streams[session] = asyncio.ensure_future(self._read(response, session))

    async def _resume_stream(self, session: str | None, last: str) -> Any:
        """The stream again, from after event ``last``; ``None`` if the server cannot
        resume it (it restarted, or the gap outgrew its log) or is gone for too long."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._resume_within
        delays = backoff_delays()
        while not self._closed and loop.time() < deadline:
            try:
                response = await self._open_stream(session, last)
            except self._httpx.TransportError as exc:
                log.info("resuming an event stream failed (%s); retrying", exc)
            else:
                if response.status_code == 200:
                    self.resumes += 1
                    return response
                if response.status_code in GATEWAY_ERRORS:
                    # A load balancer whose worker just died, not the server refusing.
                    await response.aclose()
                    log.info("resuming an event stream: HTTP %d; retrying", response.status_code)
                    await asyncio.sleep(min(next(delays), max(0.0, deadline - loop.time())))
                    continue
                reason = None
                if response.status_code == STILL_HELD:
                    await response.aread()
                    reason = refusal_reason(response.content)
                await response.aclose()
                if response.status_code != STILL_HELD or reason not in (None, STREAM_IN_USE):
                    status = response.status_code
                    log.info(
                        "the server refused to resume an event stream: HTTP %d %s",
                        status,
                        reason or "",
                    )
                    return None
                log.info("the broken event stream is still held on the server; retrying")
            await asyncio.sleep(min(next(delays), max(0.0, deadline - loop.time())))
        return None

    async def _read(self, response: Any, session: str | None) -> None:
        """Read one stream to its end, resuming it (``Last-Event-ID``) when it breaks."""
        ended: _Broken | None = None
        while True:
            try:
                ended = await self._events(response, session)
                break  # the server ended the stream (cleanly, or saying why)
            except self._httpx.HTTPError as exc:
                if self._closed:
                    break
                ended = _Broken(ConnectionClosedError(f"event stream broke: {exc}", broken=True))
            finally:
                with contextlib.suppress(Exception):
                    await response.aclose()
            last = self._last_ids.get(session)
            if last is None:
                break  # a server that sends no event ids cannot resume the stream
            again = await self._resume_stream(session, last)
            if again is None:
                break
            response = again
        if session is None and not self._closed:
            if ended is not None and ended.gone:
                # The server replayed what a dead worker kept, then said the connection is
                # gone: the session streams have their replays to deliver first.
                others = [t for s, t in self._streams.items() if s is not None and not t.done()]
                if others:
                    await asyncio.wait(others, timeout=self._resume_within)
            await self._inbox.put(ended)  # None: the server ended the connection cleanly
        elif ended is not None and not self._closed:
            await self._inbox.put(ended)

    async def _events(self, response: Any, session: str | None) -> _Broken | None:
        """Deliver the events of one response until it ends: ``None`` for a clean end, the
        server's ``event: error`` as a broken end; a broken stream raises ``HTTPError``.

        The SSE text is cut into events on bytes (a blank line ends one), not decoded
        line by line: a burst of updates arrives as one chunk of many events."""
        buffer = b""
        skipped = 0
        """Bytes of an event too large to keep, dropped as they come."""
        limit = self.max_message_size + 4096  # room for the field names of one event
        async for chunk in self._watched(response):
            buffer += chunk
            if b"\r" in buffer:  # CRLF or CR line ends (SSE allows them); keep a lone
                # trailing CR, which may be the first half of a CRLF still on its way
                tail = b"\r" if buffer.endswith(b"\r") else b""
                body = buffer[:-1] if tail else buffer
                buffer = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + tail
            while True:
                end = buffer.find(b"\n\n")
                if end < 0:
                    break
                block, buffer = buffer[:end], buffer[end + 2 :]
                if skipped:
                    await self._inbox.put(Oversize(skipped + len(block)))
                    skipped = 0
                    continue
                ended, broken = await self._event(block, session)
                if ended:
                    return broken
            if len(buffer) > limit:
                skipped += len(buffer)
                buffer = b""
        return None

    async def _watched(self, response: Any) -> AsyncIterator[bytes]:
        """The bytes of a stream; (durable) one that carries nothing, keepalives included,
        for five keepalive intervals is taken for dead (a half-open connection)."""
        interval = None
        if self.durable is not None:
            interval = self.durable.keepalive
            echoed = response.headers.get("acp-keepalive")
            with contextlib.suppress(ValueError, TypeError):
                interval = float(echoed) if echoed is not None else interval
        chunks = response.aiter_bytes()
        if interval is None:
            async for chunk in chunks:
                yield chunk
            return
        while True:
            try:
                chunk = await within(anext(chunks), 5 * interval)
            except StopAsyncIteration:
                return
            except asyncio.TimeoutError:
                raise self._httpx.ReadTimeout(f"nothing heard for {5 * interval:g} s") from None
            yield chunk

    async def _event(self, block: bytes, session: str | None) -> tuple[bool, _Broken | None]:
        """One SSE event: (the stream ended, how it broke if it did; see :meth:`_events`)."""
        data: list[bytes] = []
        event = b"message"
        event_id: str | None = None
        for line in block.split(b"\n"):
            if not line or line.startswith(b":"):
                continue
            name, _, value = line.partition(b":")
            if value.startswith(b" "):
                value = value[1:]
            if name == b"data":
                data.append(value)
            elif name == b"id":
                event_id = (
                    value.decode("utf-8", "replace") if value and b"\0" not in value else None
                )
            elif name == b"event":
                event = value
        if event == b"error":
            # The server's way of saying the connection broke (its agent failed): not a
            # clean end (docs/remote.md). It comes on every stream; the connection
            # stream's, after the last answers, is the one that ends the transport.
            if session is None:
                reason = b"\n".join(data)[:200].decode("utf-8", "replace")
                error = ConnectionClosedError(f"the server reported: {reason}", broken=True)
                return True, _Broken(error, gone=refusal_reason(b"".join(data)) == CONNECTION_GONE)
            return True, None
        if not data:
            return False, None
        last = self._last_ids.get(session)
        if event_id is not None:
            if last is not None and _not_after(event_id, last):
                return False, None  # already delivered before the stream was resumed
            self._last_ids[session] = event_id
        payload = data[0] if len(data) == 1 else b"\n".join(data)
        if len(payload) > self.max_message_size:
            await self._inbox.put(Oversize(len(payload)))
        else:
            await self._deliver(payload, session)
        return False, None

    async def _deliver(self, message: bytes, session: str | None) -> None:
        try:
            p = peek(message)
        except NotAMessage:
            await self._inbox.put(message)
            return
        if p.method in (RESUMED, RESUME_FAILED) and self.durable is not None:
            self._note_turn_states(message, session)  # for the transport, not the application
            return
        if p.kind == "request" and p.id is not None:
            self._incoming[p.id] = p.session_id if p.session_id is not None else session
        await self._inbox.put(message)

    def _note_turn_states(self, message: bytes, session: str | None) -> None:
        """Keep what a ``stream/resumed`` says of each turn (it is not for the application)."""
        try:
            meta = msgspec.json.decode(message)["params"]["_meta"]
        except (msgspec.DecodeError, KeyError, TypeError):
            return
        if not isinstance(meta, dict):
            return
        meta = cast("dict[str, Any]", meta)
        states = meta.get(TURN_STATES)
        if isinstance(states, dict):
            self.turn_states.update(cast("dict[str, Any]", states))
        elif session is not None and isinstance(meta.get(TURN_STATE), dict):
            self.turn_states[session] = meta[TURN_STATE]

    # -- the contract ----------------------------------------------------------------

    async def receive(self) -> bytes | Oversize | None:
        if self._eof:
            return None
        item = await self._inbox.get()
        if item is None:
            self._eof = True
            return None
        if isinstance(item, _Broken):
            self._eof = True
            raise item.error
        return item

    async def close(self) -> None:
        """DELETE the connection (best effort), stop the streams, release the client."""
        if self._closed:
            return
        self._closed = True
        if self.connection_id is not None and not self._eof:
            with contextlib.suppress(Exception):
                await self._client.delete(
                    self.url, headers={CONNECTION_HEADER: self.connection_id}, timeout=5.0
                )
        for task in self._streams.values():
            task.cancel()
        for task in self._streams.values():
            with contextlib.suppress(BaseException):
                await task
        with contextlib.suppress(Exception):
            await self._client.aclose()


async def connect_http(
    url: str,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    http2: bool | None = False,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    request_timeout: float = 120.0,
    verify: bool | ssl.SSLContext = True,
    cookies: Any = None,
) -> HttpTransport:
    """A transport to ``url`` (``http(s)://host:port/acp``); the connection starts with ``initialize``.

    ``token`` is sent as ``Authorization: Bearer TOKEN`` (what ``acp serve``
    expects); ``headers`` go on every request (another authentication scheme,
    say). ``verify`` is ``False`` or an :class:`ssl.SSLContext` trusting a
    private CA. ``http2``: ``False`` HTTP/1.1, ``True`` HTTP/2 only (h2c on
    ``http://``, ALPN on ``https://``), ``None`` HTTP/2 with a fallback to
    HTTP/1.1. Cookies the server sets are kept in ``transport.cookies`` (an
    ``httpx.Cookies``; pass one as ``cookies`` to start from it, or to share it
    with a later connection) and sent back on every request (RFD). Use the result with
    :class:`~acpwire.client.connection.ClientSideConnection` or
    ``ToolkitClient.connect(...)``.
    """
    httpx = _httpx()
    common: dict[str, Any] = {
        "headers": auth_headers(token, headers),
        "timeout": httpx.Timeout(request_timeout),
        "cookies": cookies,
    }
    h1_options: dict[str, Any] = {
        "verify": verify,
        "limits": httpx.Limits(max_connections=None, max_keepalive_connections=20),
    }
    if http2 is False:
        # POSTs on acpwire's own HTTP/1.1 connections (see ._h1 for why), the rest on httpx's.
        from ._h1 import Http1Transport

        fallback = httpx.AsyncHTTPTransport(**h1_options)
        posts = Http1Transport(fallback, verify=verify, max_body=max_message_size + 65536)
        client = httpx.AsyncClient(transport=posts, **common)
    else:
        # Our own HTTP/2 transport (see ._h2 for why not httpx's): h2c with prior
        # knowledge on http://, ALPN h2 on https://, one TCP connection. ``None``:
        # HTTP/1.1 for a server that turns out not to speak HTTP/2.
        from ._h2 import Http2Transport

        fallback = httpx.AsyncHTTPTransport(**h1_options) if http2 is None else None
        transport = Http2Transport(verify=verify, fallback=fallback)
        client = httpx.AsyncClient(transport=transport, **common)
    return HttpTransport(
        url, client, max_message_size=max_message_size, request_timeout=request_timeout
    )


def _connection_unknown(body: bytes) -> bool:
    """A 404 whose JSON-RPC error says the connection, not the session, is unknown."""
    try:
        error = msgspec.json.decode(body).get("error")
    except (msgspec.DecodeError, AttributeError):
        return False
    return isinstance(error, dict) and error.get("message") == "unknown connection"
