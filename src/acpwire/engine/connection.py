"""The asyncio runtime both roles share: one :class:`Connection` per peer.

Guarantees (tested in ``tests/engine``):

* **Ordering.** Incoming notifications are handled one at a time, in the order
  they arrived. A response is delivered to the awaiting caller only after every
  notification that arrived before it has been handled, so an agent's
  ``session/update`` messages are all seen before its ``session/prompt``
  answer resolves.
* **Concurrency.** Every incoming request runs in its own task, so a long
  ``session/prompt`` never blocks ``session/cancel``, permission answers or
  other sessions. Both sides may have many requests in flight at once.
* **Cancellation.** Each incoming request's task is keyed by its id; a
  ``$/cancel_request`` for that id cancels the task and the request is
  answered ``-32800`` (unless the handler still produces its own answer).
  A handler that ends its work in good order itself may take that over
  (:meth:`Connection.take_cancellation`): the ``$/cancel_request`` then calls
  its callback instead (AgentApp's turns answer ``cancelled``).
  A caller that abandons an outgoing request (its task is cancelled) makes the
  connection send ``$/cancel_request`` for it; the peer's late answer is then
  expected and dropped without a warning.
* **Back-pressure.** At most ``INBOX_HIGH_WATER`` notifications wait for
  their handlers; past that the connection stops reading, so a peer that
  writes faster than this side handles is slowed down and memory stays bounded.
* **Closing.** When the transport ends, cleanly or not, every pending outgoing
  call fails at once with :class:`ConnectionClosedError`, and running handlers
  are cancelled — after a clean end of input, only once they have had
  ``EOF_GRACE`` seconds to write their answers. Nothing waits forever.
* **Errors.** A handler's :class:`RequestError` goes to the peer as is, unless
  it is the peer's own answer to one of this side's calls (``from_peer``): that
  one says nothing about the request being answered, so it becomes ``-32603``
  with the peer's message in ``data.details``. Any other exception is logged
  here and answered ``-32603`` without its text.
  Malformed input is answered ``-32700``/``-32600`` (id null when unknown) and
  the connection carries on.
* **Trace context.** A request whose ``_meta`` carries a W3C ``traceparent``
  makes it current for its handler; every message sent meanwhile carries it
  in its own ``_meta`` (:mod:`acpwire.engine.trace`).
* **Tolerance.** What this side sends is strictly valid; what it accepts is
  not. A ``null`` result is taken as ``{}`` when the expected result is an
  object whose fields are all optional (some clients answer
  ``fs/write_text_file`` with ``null``). An error response with ``id: null``
  (a peer that could not parse, or would not take, one of our notifications)
  is logged once per connection, then only at debug level.

Notification handlers must not await requests to the peer themselves (the
answer would queue behind them): start a task for that.

**Routes** are the connection's :class:`Router` until :meth:`Connection.use_router`
replaces them, which a role does once ``initialize`` chose a protocol version (an
agent serving v1 and the v2 draft, a client that offered v2): the agent before it
answers ``initialize``, the client in the ``then`` callback of its ``initialize``
request, which runs in receive order, so every message after the answer is served
by the new routes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar, copy_context
from dataclasses import dataclass
from typing import Any, cast

import msgspec

from .._flag import Flag
from .._tasks import TaskSet
from ..protocol import messages as wire
from ..protocol.errors import (
    ConnectionClosedError,
    InternalError,
    InvalidParams,
    MethodNotFound,
    RequestCancelled,
    RequestError,
)
from ..protocol.framing import Oversize
from ..protocol.trace_context import TraceContext, with_trace
from ..schema.codec import decoder_for, fast_decoder_for
from ..transports.base import PushesMessages, ReadsAhead, Transport
from .trace import current_trace, hooks

log = logging.getLogger("acpwire.engine")
_current_trace = current_trace.get  # bound once: read for every outgoing message

CANCEL_REQUEST = "$/cancel_request"
EOF_GRACE = 1.0
"""Seconds the requests in hand may still take to answer after a clean end of input."""
INBOX_HIGH_WATER = 2048
"""Notifications queued before the reader pauses (back-pressure to the peer)."""
ABANDONED_MEMORY = 1024
"""Abandoned request ids remembered; a peer that never answers them cannot grow memory."""

Handler = Callable[[Any], Awaitable[Any]]
ExtRequestHandler = Callable[[str, Any], Awaitable[Any]]
ExtNotificationHandler = Callable[[str, Any], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Route:
    """How to serve one method: the params type to decode into and the handler."""

    params_type: Any
    handler: Handler


@dataclass(slots=True)
class Router:
    """What a connection serves: routes by method name plus extension fallbacks."""

    requests: Mapping[str, Route]
    notifications: Mapping[str, Route]
    ext_request: ExtRequestHandler | None = None
    ext_notification: ExtNotificationHandler | None = None


@dataclass(slots=True)
class _Pending:
    future: asyncio.Future[Any]
    method: str
    result_type: Any
    then: Callable[[Any], None] | None = None


_any_decoder = msgspec.json.Decoder()
_EMPTY_OBJECT = b"{}"

_IGNORED = object()  # a notification whose params could not be decoded

_serving: ContextVar[tuple[Connection, Any] | None] = ContextVar("acpwire_serving", default=None)
"""The connection and id of the request the current task serves (set in its own task)."""


def _invalid_params(exc: msgspec.ValidationError) -> InvalidParams:
    text = str(exc)
    message, _, path = text.rpartition(" - at `")
    if not message:
        message, path = text, ""
    data: dict[str, Any] = {"message": message}
    if path:
        data["path"] = path.rstrip("`")
    return InvalidParams("Invalid params", data)


def _decode_result(result_type: Any, raw: msgspec.Raw) -> Any:
    """Decode a result; ``null`` stands for ``{}`` where an empty object is a valid answer."""
    decode = decoder_for(result_type)
    try:
        return decode(raw)
    except msgspec.ValidationError as exc:
        if bytes(raw) != b"null":
            raise
        error = exc
    try:
        return decode(_EMPTY_OBJECT)
    except msgspec.ValidationError:
        raise error from None  # {} is not a valid answer either: report the null


def _own_error(error: RequestError, method: str, name: str) -> RequestError:
    """The error to answer a request with. An error the peer answered to one of our
    own calls says nothing about this request (a -32602 about a peer's answer is not
    about these params): it becomes -32603, with the peer's words in ``data.details``."""
    if not error.from_peer:
        return error
    log.warning("%s: handler for %s failed on the peer's error: %s", name, method, error)
    return InternalError(data={"details": f"{error.message} (code {error.code})"})


def _adopt_trace(params: Any) -> TraceContext | None:
    """Make the trace context in a request's ``_meta`` current for the task handling it
    (its own context, so nothing needs resetting)."""
    meta: object = (
        cast("dict[str, object]", params).get("_meta")
        if type(params) is dict
        else getattr(params, "meta", None)
    )
    if not meta:
        return None
    trace = TraceContext.from_meta(meta)
    if trace is not None:
        current_trace.set(trace)
    return trace


def _answered() -> None:
    """What a ``$/cancel_request`` does once its request's answer is being written."""


class Connection:
    """A JSON-RPC 2.0 peer over one :class:`~acpwire.transports.base.Transport`."""

    def __init__(self, transport: Transport, router: Router, *, name: str = "acp") -> None:
        self.transport = transport
        self.router = router
        self.name = name
        self._ids = itertools.count()
        self._pending: dict[Any, _Pending] = {}
        self._incoming: dict[Any, asyncio.Task[None]] = {}
        self._cancelled_by_peer: set[Any] = set()
        # Request id -> what a $/cancel_request for it calls instead of cancelling its task.
        self._cancel_handlers: dict[Any, Callable[[], None]] = {}
        # Ids of requests we abandoned (oldest first), whose late answers are expected.
        self._abandoned: dict[Any, None] = {}
        # Notifications and responses waiting for their turn, in arrival order (a
        # callable only for the final shutdown). Messages are queued as they are,
        # no closure per message.
        self._inbox: deque[wire.Notification | wire.Response | Callable[[], None]] = deque()
        self._inbox_ready = Flag()
        self._inbox_idle = False  # the worker waits on _inbox_ready
        self._inbox_busy = False
        self._inbox_drained = Flag()
        self._inbox_drained.set()
        self._reader_paused = False
        # method -> (fast decode, tolerant decode, handler) for notifications, filled on
        # first use (emptied when use_router() replaces the routes).
        self._notification_routes: dict[
            str, tuple[Callable[[Any], Any], Callable[[Any], Any], Handler]
        ] = {}
        self._reader: asyncio.Task[None] | None = None
        self._worker: asyncio.Task[None] | None = None
        # Set by start(); asyncio.get_running_loop() costs a getpid() system call.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed: ConnectionClosedError | None = None
        self._done = asyncio.Event()
        # Answers sent from outside a request's task (cancellations, refusals).
        self._sends = TaskSet(log)
        self._orphan_errors = 0  # error responses with id null, logged once

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the connection runs on (None before :meth:`start`); cheaper to
        read than ``asyncio.get_running_loop()``, which makes a system call on 3.11."""
        return self._loop

    # -- lifecycle -------------------------------------------------------

    def start(self) -> None:
        """Start reading from the transport. Idempotent."""
        if self._reader is None:
            loop = self._loop = asyncio.get_running_loop()
            # Started from inside a traced request, the loops must not inherit its trace.
            untraced = current_trace.set(None)
            self._reader = loop.create_task(self._read_loop())
            self._worker = loop.create_task(self._inbox_loop())
            current_trace.reset(untraced)

    @property
    def closed(self) -> bool:
        return self._closed is not None

    async def wait_closed(self) -> None:
        """Wait until the peer hangs up or :meth:`close` is called."""
        self.start()
        await self._done.wait()

    async def close(self) -> None:
        """Close the transport and fail everything still pending."""
        self._shutdown(ConnectionClosedError("connection closed"))
        with contextlib.suppress(Exception):
            await self.transport.close()
        await self._stop_tasks()

    async def drain(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the requests in hand to be answered.

        True when none is left. Requests that arrive meanwhile are not waited for.
        """
        tasks = list(self._incoming.values())
        if not tasks:
            return True
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        return not pending

    async def __aenter__(self) -> Connection:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _fail_pending(self, reason: ConnectionClosedError) -> None:
        pending, self._pending = self._pending, {}
        for p in pending.values():
            if not p.future.done():
                p.future.set_exception(reason)

    def _shutdown(self, reason: ConnectionClosedError) -> None:
        if self._closed is not None:
            return
        self._closed = reason
        self._fail_pending(reason)
        for task in list(self._incoming.values()):
            task.cancel()
        self._done.set()
        self._inbox_ready.set()
        self._inbox_drained.set()

    async def _stop_tasks(self) -> None:
        current = asyncio.current_task()
        tasks = [t for t in (self._reader, self._worker, *self._incoming.values()) if t]
        tasks = [t for t in tasks if t is not current and not t.done()]
        for t in tasks:
            t.cancel()
        await self._sends.aclose()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # -- outgoing --------------------------------------------------------

    def use_router(self, router: Router) -> None:
        """Serve ``router`` from the next incoming message on (see "Routes" above).
        Requests already running finish with the handlers they started with."""
        self.router = router
        self._notification_routes.clear()

    async def request(
        self,
        method: str,
        params: Any,
        result_type: Any = None,
        *,
        then: Callable[[Any], None] | None = None,
    ) -> Any:
        """Send a request and wait for its answer, decoded into ``result_type``.

        ``then`` is called with the decoded answer in receive order, before any
        message that arrived after it is handled; if it raises, the request raises that.
        Raises the peer's :class:`RequestError`, or :class:`ConnectionClosedError`.
        Cancelling the awaiting task sends ``$/cancel_request`` to the peer.
        """
        if self._closed is not None:
            raise ConnectionClosedError(str(self._closed), broken=self._closed.broken)
        self.start()
        request_id = next(self._ids)
        future: asyncio.Future[Any] = (self._loop or asyncio.get_running_loop()).create_future()
        self._pending[request_id] = _Pending(future, method, result_type, then)
        trace = _current_trace()
        if trace is not None:
            params = with_trace(params, trace)
        try:
            await self.transport.send(wire.encode_request(request_id, method, params))
            return await future
        except asyncio.CancelledError:
            if self._pending.pop(request_id, None) is not None and self._closed is None:
                self._abandoned[request_id] = None
                if len(self._abandoned) > ABANDONED_MEMORY:
                    del self._abandoned[next(iter(self._abandoned))]
                self._sends.spawn(
                    self._send_quietly(
                        wire.encode_notification(CANCEL_REQUEST, {"requestId": request_id})
                    )
                )
            raise
        finally:
            self._pending.pop(request_id, None)

    async def notify(self, method: str, params: Any) -> None:
        """Send a notification."""
        if self._closed is not None:
            raise ConnectionClosedError(str(self._closed), broken=self._closed.broken)
        trace = _current_trace()
        if trace is not None:
            params = with_trace(params, trace)
        await self.transport.send(wire.encode_notification(method, params))

    async def notify_encoded(self, line: bytes) -> None:
        """Send a notification as :func:`~acpwire.protocol.messages.encode_notification`
        encoded it: for a sender of many alike that makes their bytes faster itself
        (``turn.say`` encodes a message's chunks around their text)."""
        if self._closed is not None:
            raise ConnectionClosedError(str(self._closed), broken=self._closed.broken)
        await self.transport.send(line)

    def take_cancellation(self, callback: Callable[[], None]) -> bool:
        """From a request handler: a ``$/cancel_request`` for this request calls ``callback``
        instead of cancelling the handler's task.

        For handlers that end their work in good order themselves: the request is
        then answered by the handler, as usual. The connection closing still
        cancels the task. Returns False, changing nothing, when the current task
        does not serve a request of this connection.
        """
        serving = _serving.get()
        if serving is None or serving[0] is not self:
            return False
        self._cancel_handlers[serving[1]] = callback
        return True

    async def _send_quietly(self, line: bytes) -> None:
        try:
            await self.transport.send(line)
        except (ConnectionClosedError, ConnectionError, OSError):
            pass

    # -- incoming --------------------------------------------------------

    async def _read_loop(self) -> None:
        reason = ConnectionClosedError("peer closed the connection")
        transport = self.transport
        receive = transport.receive
        # Optional (transports/base.py): the messages a transport already holds, so a
        # burst is taken in one step instead of a coroutine per message.
        take_ready = transport.take_ready if isinstance(transport, ReadsAhead) else None
        inbox, parse, notification = self._inbox, wire.parse, wire.Notification
        if isinstance(transport, PushesMessages):
            # Handlers of pushed messages start in this task's context, as if read here.
            context, take = copy_context(), self._take_pushed
            transport.push_to(lambda line: context.run(take, line))
        try:
            while True:
                first = await receive()
                if first is None:
                    break
                for line in [first, *take_ready()] if take_ready is not None else (first,):
                    if isinstance(line, Oversize):
                        log.error(
                            "%s: dropped an incoming message of %d bytes (over the size limit)",
                            self.name,
                            line.size,
                        )
                        continue
                    msg = parse(line)
                    if type(msg) is notification and msg.method != CANCEL_REQUEST:
                        inbox.append(msg)  # _dispatch's most common case, inline
                        if self._inbox_idle:
                            self._inbox_idle = False
                            self._inbox_ready.set()
                    else:
                        self._dispatch(msg)
                    if len(inbox) > INBOX_HIGH_WATER:
                        # Handlers are behind: stop reading so the peer's writes block.
                        self._reader_paused = True
                        self._inbox_drained.clear()
                        await self._inbox_drained.wait()
        except ConnectionClosedError as exc:
            reason = exc
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a transport bug must not hang callers
            log.exception("%s: transport failed", self.name)
            reason = ConnectionClosedError(f"transport failed: {exc}", broken=True)
        if not reason.broken and self._incoming:
            # A clean end of input (the peer closed its side, or stdin was a file):
            # its requests still in hand get a moment to write their answers.
            # Our own calls can no longer be answered, so they fail now.
            self._fail_pending(reason)
            await asyncio.wait(list(self._incoming.values()), timeout=EOF_GRACE)
        # Let notifications that arrived before the end be handled first.
        self._inbox.append(lambda: self._shutdown(reason))
        self._inbox_ready.set()
        self._inbox_idle = False

    def _take_pushed(self, line: bytes) -> bool:
        """A message the transport hands over without queueing (see transports/base.py):
        taken as the read loop takes one; ``False`` (nothing done) while handlers are
        behind or once closed: the transport queues it and the read loop gets it."""
        if self._closed is not None or len(self._inbox) > INBOX_HIGH_WATER:
            return False
        try:
            self._dispatch(wire.parse(line))
        except Exception:  # as in the read loop: a bug here must not break the producer
            log.exception("%s: a pushed message failed", self.name)
        return True

    def _dispatch(self, msg: wire.Message) -> None:
        if isinstance(msg, wire.Notification):
            if msg.method == CANCEL_REQUEST:
                self._on_cancel_request(msg.params)
                return
            self._inbox.append(msg)
            if self._inbox_idle:
                self._inbox_idle = False
                self._inbox_ready.set()
        elif isinstance(msg, wire.Request):
            if msg.id in self._incoming:
                log.warning("%s: duplicate request id %r", self.name, msg.id)
            task = (self._loop or asyncio.get_running_loop()).create_task(self._handle_request(msg))
            self._incoming[msg.id] = task
            task.add_done_callback(functools.partial(self._request_done, msg.id))
        elif isinstance(msg, wire.Response):
            pending = self._pending.get(msg.id)
            if pending is None:
                self._unmatched_response(msg)
                return
            if self._inbox or self._inbox_busy:
                self._inbox.append(msg)
                if self._inbox_idle:
                    self._inbox_idle = False
                    self._inbox_ready.set()
            else:
                self._resolve(msg)
        else:
            log.warning("%s: invalid message: %s", self.name, msg.error.message)
            if msg.respond:
                self._sends.spawn(self._send_quietly(wire.encode_error(msg.id, msg.error)))

    def _unmatched_response(self, msg: wire.Response) -> None:
        if msg.id in self._abandoned:
            del self._abandoned[msg.id]
            log.debug("%s: late answer to abandoned request %r", self.name, msg.id)
            return
        if msg.id is not None or msg.error is None:
            log.warning("%s: response to unknown request id %r", self.name, msg.id)
            return
        # JSON-RPC's answer to a message whose id could not be read. Some clients
        # send one for every notification they fail to parse: say it once.
        self._orphan_errors += 1
        log.log(
            logging.WARNING if self._orphan_errors == 1 else logging.DEBUG,
            "%s: the peer answered a message it could not take with an error without id "
            "(%s); further ones are logged at debug level",
            self.name,
            msg.error,
        )

    def _resolve(self, msg: wire.Response) -> None:
        pending = self._pending.pop(msg.id, None)
        if pending is None or pending.future.done():
            return
        if msg.error is not None:
            pending.future.set_exception(msg.error)
            return
        assert msg.result is not None
        try:
            if pending.result_type is None:
                value = _any_decoder.decode(msg.result)
            else:
                value = _decode_result(pending.result_type, msg.result)
        except msgspec.ValidationError as exc:
            error = InvalidParams(
                f"peer's answer to {pending.method} does not match the schema", str(exc)
            )
            error.from_peer = True
            pending.future.set_exception(error)
            return
        if pending.then is not None:
            try:
                pending.then(value)
            except Exception as exc:
                pending.future.set_exception(exc)
                return
        pending.future.set_result(value)

    async def _inbox_loop(self) -> None:
        # The hot path of a streaming turn: one iteration per notification, so it
        # handles notifications inline (no coroutine, closure or task per message).
        inbox = self._inbox
        routes = self._notification_routes
        half = INBOX_HIGH_WATER // 2
        notification, response = wire.Notification, wire.Response
        while True:
            if not inbox:
                self._inbox_ready.clear()
                self._inbox_idle = True
                await self._inbox_ready.wait()
                continue
            item = inbox.popleft()
            if self._reader_paused and len(inbox) < half:
                self._reader_paused = False
                self._inbox_drained.set()
            self._inbox_busy = True
            try:
                if isinstance(item, notification):
                    route = routes.get(item.method) or self._notification_route(item.method)
                    if route is None:
                        await self._handle_unrouted_notification(item)
                    else:
                        try:
                            params = route[0](item.params)
                        except msgspec.ValidationError:  # an unknown union member, or nonsense
                            params = self._decode_tolerant(route[1], item)
                        if params is not _IGNORED:
                            await route[2](params)
                elif isinstance(item, response):
                    self._resolve(item)
                else:
                    item()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: notification handler failed", self.name)
            finally:
                self._inbox_busy = False
            if self._closed is not None and not inbox:
                return

    def _decode_tolerant(self, decode: Callable[[Any], Any], msg: wire.Notification) -> Any:
        try:
            return decode(msg.params)
        except msgspec.ValidationError as exc:
            log.warning("%s: ignored %s with invalid params: %s", self.name, msg.method, exc)
            return _IGNORED

    def _notification_route(
        self, method: str
    ) -> tuple[Callable[[Any], Any], Callable[[Any], Any], Handler] | None:
        route = self.router.notifications.get(method)
        if route is None:
            return None
        decode = decoder_for(route.params_type)
        entry = (fast_decoder_for(route.params_type), decode, route.handler)
        self._notification_routes[method] = entry
        return entry

    async def _handle_unrouted_notification(self, msg: wire.Notification) -> None:
        if msg.method.startswith("_") and self.router.ext_notification is not None:
            await self.router.ext_notification(msg.method, _any_decoder.decode(msg.params))
        # Unknown notifications (and any "$/..." one) are ignored, as the spec asks.

    def _on_cancel_request(self, raw: msgspec.Raw) -> None:
        try:
            params = _any_decoder.decode(raw)
            request_id = params["requestId"]
        except (msgspec.DecodeError, KeyError, TypeError):
            return
        task = self._incoming.get(request_id)
        if task is not None and not task.done():
            handler = self._cancel_handlers.get(request_id)
            if handler is not None:
                try:
                    handler()
                except Exception:
                    log.exception(
                        "%s: cancellation handler of request %r failed", self.name, request_id
                    )
                return
            self._cancelled_by_peer.add(request_id)
            task.cancel()

    async def _handle_request(self, msg: wire.Request) -> None:
        request_id = msg.id
        _serving.set((self, request_id))  # in this task's own context
        try:
            route = self.router.requests.get(msg.method)
            if route is None:
                result = await self._call_unrouted(msg)
            else:
                try:
                    params = decoder_for(route.params_type)(msg.params)
                except msgspec.ValidationError as exc:
                    raise _invalid_params(exc) from None
                trace = _adopt_trace(params)
                tracer = hooks.tracer
                if tracer is None:
                    result = await route.handler(params)
                else:
                    result = await tracer.handle(
                        self.name, msg.method, params, trace, route.handler
                    )
            line = wire.encode_result(request_id, result)
        except RequestError as exc:
            line = wire.encode_error(request_id, _own_error(exc, msg.method, self.name))
        except asyncio.CancelledError:
            raise  # answered by _request_done when the peer asked for it
        except Exception:
            log.exception("%s: handler for %s failed", self.name, msg.method)
            line = wire.encode_error(request_id, InternalError())
        if self._closed is None:
            # Answered from here on: a $/cancel_request that comes while the answer is
            # written (a send may wait) neither cuts it off nor adds a -32800 after it.
            self._cancel_handlers[request_id] = _answered
            await self._send_quietly(line)

    def _request_done(self, request_id: Any, task: asyncio.Task[None]) -> None:
        if self._incoming.get(request_id) is task:
            del self._incoming[request_id]
            if self._cancel_handlers:
                self._cancel_handlers.pop(request_id, None)
        by_peer = request_id in self._cancelled_by_peer
        self._cancelled_by_peer.discard(request_id)
        # Cancelled at the peer's request (even before it started): still answer, with -32800.
        if task.cancelled() and by_peer and self._closed is None:
            self._sends.spawn(self._send_quietly(wire.encode_error(request_id, RequestCancelled())))

    async def _call_unrouted(self, msg: wire.Request) -> Any:
        if msg.method.startswith("_") and self.router.ext_request is not None:
            params = _any_decoder.decode(msg.params)
            _adopt_trace(params)
            return await self.router.ext_request(msg.method, params)
        raise MethodNotFound(f"Method not found: {msg.method}", {"method": msg.method})
