"""What acpwire changes in hypercorn 0.18 (the latest release), each fix a hook.

Every hook acts only for a config that :func:`configure` marked: other hypercorn
servers in the same process keep hypercorn's behaviour. The changes, each with what
went wrong without it (the tests that attack each are named in docs/security.md):

* :func:`_no_unasked_compression`: WebSocket compression only when asked for.
* :func:`_h2_early_answers`: DATA for an HTTP/2 stream already answered no longer ends
  the whole connection.
* :func:`_no_websocket_over_h2`: RFC 8441 is not offered (its pongs were unbounded).
* :func:`_h2_back_pressure`: an HTTP/2 response waits while its send buffer is full.
* :func:`_no_full_queue_at_the_end`: a request answered early gets its answer even when
  its body filled the app's queue.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from .limits import Limits

_installed: list[bool] = []


def install() -> None:
    """Install the hooks (once per process)."""
    if _installed:
        return
    _no_unasked_compression()
    _h2_early_answers()
    _no_websocket_over_h2()
    _h2_back_pressure()
    _no_full_queue_at_the_end()
    _installed.append(True)


def configure(config: Any, limits: Limits, *, websocket_compression: bool) -> None:
    """Mark a hypercorn ``Config`` as ours: the hooks read these attributes."""
    config.acpwire_websocket_compression = websocket_compression
    config.acpwire_h2_drain_bytes = 4 * limits.max_message_size
    config.acpwire_no_websocket_over_h2 = True
    config.acpwire_h2_back_pressure = True
    config.acpwire_no_full_queue_at_the_end = True


def _no_unasked_compression() -> None:
    """Make hypercorn's WebSocket handshake follow ``websocket_compression``.

    hypercorn always answers a client's ``permessage-deflate`` offer with
    acceptance and has no setting for it. The hook forgets the offer before
    the handshake is answered when the server's config (ours only: other
    hypercorn configs keep hypercorn's behaviour) has compression off.
    """
    from hypercorn.protocol import ws_stream

    stream_class: Any = ws_stream.WSStream
    accept: Callable[[Any, Any], Awaitable[None]] = stream_class._accept

    async def _accept(stream: Any, message: Any) -> None:
        if getattr(stream.config, "acpwire_websocket_compression", True) is False:
            stream.handshake.extensions = None
        await accept(stream, message)

    stream_class._accept = _accept


def _h2_early_answers() -> None:
    """Let an HTTP/2 request be answered before its body has come, as RFC 9113 8.1 allows.

    hypercorn 0.18 (the latest) forgets a stream once its answer is sent, and then takes
    a DATA frame the client still sends on it for a ``KeyError`` in the connection's
    read loop: the TCP connection ends, and every SSE stream on it. An early answer is
    what the endpoint gives a POST it refuses before reading the body (413 for a
    declared length, 415, 401). With the hook, the rest of such a body is read and
    dropped (flow control counts it, so the client can finish sending and then read the
    answer, as httpx does), up to ``config.acpwire_h2_drain_bytes`` per stream; past that
    the stream is reset with NO_ERROR, which asks the client to stop sending.
    """
    import h2.errors
    import h2.events
    import h2.exceptions
    from hypercorn.protocol import h2 as hypercorn_h2

    protocol_class: Any = hypercorn_h2.H2Protocol
    handle_events: Callable[[Any, list[Any]], Awaitable[None]] = protocol_class._handle_events

    def drop(protocol: Any, event: Any, budget: int) -> None:
        connection = protocol.connection
        connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        dropped: dict[int, int] = protocol.__dict__.setdefault("acpwire_dropped", {})
        total = dropped.get(event.stream_id, 0) + event.flow_controlled_length
        if event.stream_ended is not None:
            dropped.pop(event.stream_id, None)
        elif total > budget:
            dropped.pop(event.stream_id, None)
            with contextlib.suppress(h2.exceptions.ProtocolError):
                connection.reset_stream(event.stream_id, h2.errors.ErrorCodes.NO_ERROR)
        else:
            dropped[event.stream_id] = total

    async def _handle_events(protocol: Any, events: list[Any]) -> None:
        budget: int | None = getattr(protocol.config, "acpwire_h2_drain_bytes", None)
        if budget is None:
            await handle_events(protocol, events)
            return
        # One at a time: handling one event can answer and forget a stream the next is for.
        for event in events:
            if (
                isinstance(event, h2.events.DataReceived)
                and event.stream_id not in protocol.streams
            ):
                drop(protocol, event, budget)
            else:
                if isinstance(event, h2.events.StreamReset):
                    protocol.__dict__.get("acpwire_dropped", {}).pop(event.stream_id, None)
                await handle_events(protocol, [event])
        await protocol._flush()  # h2 may answer frames that made no event

    protocol_class._handle_events = _handle_events


def _no_websocket_over_h2() -> None:
    """Serve WebSockets on HTTP/1.1 only: do not offer RFC 8441 (extended CONNECT) on h2.

    hypercorn 0.18 answers a client's ping from its connection's read loop into a stream
    buffer that grows without bound while the client grants no flow-control window (a
    million pings: +31 MiB and counting), and making that write wait would stall the read
    loop that the client's window updates come through. The front's WebSockets bound
    what a client that does not read can cost (:data:`~.front.PONG_BUDGET`); no ACP client
    needs the HTTP/2 form (the ``websockets`` package, and browsers behind the proxy they
    need to send a token, use HTTP/1.1). A client that tries anyway is answered 400 by the
    front (:meth:`~.front.Front.app_for`).
    """
    import h2.settings
    from hypercorn.protocol import h2 as hypercorn_h2

    protocol_class: Any = hypercorn_h2.H2Protocol
    init: Callable[..., None] = protocol_class.__init__

    def __init__(protocol: Any, *args: Any, **kwargs: Any) -> None:
        init(protocol, *args, **kwargs)
        if getattr(protocol.config, "acpwire_no_websocket_over_h2", False):
            codes = h2.settings.SettingCodes
            values = dict(protocol.connection.local_settings.items())
            values.pop(codes.ENABLE_CONNECT_PROTOCOL, None)
            protocol.connection.local_settings = h2.settings.Settings(
                client=False, initial_values=values
            )

    protocol_class.__init__ = __init__


def _h2_back_pressure() -> None:
    """Make an HTTP/2 response wait while its stream's send buffer is full.

    hypercorn 0.18 means to pause a writer once a stream's buffer holds 32 KiB, until it
    is under 16 KiB; but its sender resumes writers whenever it takes less than 16 KiB
    out, also when flow control lets it take nothing. A client that grants no window
    then made the server keep everything its streams were sent (200,000 updates: +43 MiB,
    and on), past the endpoint's bounded queues. Here the writer resumes only once the
    buffer is under 16 KiB, so the endpoint's queues and the agent wait instead. Only
    the app's tasks write response bodies, never the connection's read loop (WebSockets
    are not served over HTTP/2), so the wait cannot hold up the window updates it needs.
    """
    from hypercorn.protocol import h2 as hypercorn_h2

    low_water = hypercorn_h2.BUFFER_LOW_WATER

    class Bounded(hypercorn_h2.StreamBuffer):
        async def pop(self, max_length: int) -> bytes:
            length = min(len(self.buffer), max_length)
            data = bytes(self.buffer[:length])
            del self.buffer[:length]
            if len(self.buffer) < low_water:
                await self._paused.set()
            if not self.buffer:
                await self._is_empty.set()
            return data

    protocol_class: Any = hypercorn_h2.H2Protocol
    create_stream: Callable[[Any, Any], Awaitable[None]] = protocol_class._create_stream

    async def _create_stream(protocol: Any, request: Any) -> None:
        await create_stream(protocol, request)
        if getattr(protocol.config, "acpwire_h2_back_pressure", False):
            protocol.stream_buffers[request.stream_id] = Bounded(protocol.context.event_class)

    protocol_class._create_stream = _create_stream


def _no_full_queue_at_the_end() -> None:
    """Let a request answered before its body was read end, whatever its body filled.

    hypercorn 0.18 tells the app its request has ended (``http.disconnect``) by putting
    that message in the app's receive queue, from the app's own last ``send``, and waits
    while the queue is full: the body chunks that filled it are the app's to read, and
    the app is waiting in that ``send``. A POST refused (413) with ten chunks of its body
    queued never got its answer (on Python 3.10 every time). The oldest chunk is dropped
    to make room: the app is done with the body, or the client is gone.
    """
    from hypercorn.protocol import http_stream
    from hypercorn.protocol.events import StreamClosed

    stream_class: Any = http_stream.HTTPStream
    handle: Callable[[Any, Any], Awaitable[None]] = stream_class.handle

    async def _handle(stream: Any, event: Any) -> None:
        if isinstance(event, StreamClosed) and getattr(
            stream.config, "acpwire_no_full_queue_at_the_end", False
        ):
            queue = getattr(getattr(stream, "app_put", None), "__self__", None)
            if isinstance(queue, asyncio.Queue) and queue.full():
                queue.get_nowait()
        await handle(stream, event)

    stream_class.handle = _handle
