"""The agent behind one remote connection: what the endpoint hosts, and how it is fed and stopped.

Each remote connection gets its own agent connection (an
:class:`~acpwire.agent.connection.Agent` from a factory, an
:class:`~acpwire.agent.app.AgentApp`, or a stdio bridge: :data:`AgentTarget`)
on an in-memory transport, :class:`AgentSide`. Rules it keeps:

* **Started late.** The agent starts on ``initialize``, not when the connection
  opens (the host caps how many run: :mod:`.host`).
* **Bounded, with a stall bound.** The client's admitted messages wait in a
  bounded queue (``Limits.queue_messages``/``queue_bytes``) unless the agent's
  engine takes them at once (try now, :meth:`AgentSide.offer`, else wait,
  :meth:`AgentSide.hand`). An agent that takes nothing for ``stall_timeout``
  seconds while its queue is full has failed (:class:`AgentStalled`): waiting
  longer would also keep its connection from noticing that its client left.
* **Heard in its own task.** What the agent sends is routed to the client's
  stream in the sending task (no queue and pump between them), one message at
  a time, in order, waiting while that stream is full; a message above
  ``max_message_size`` is dropped and logged.
* **Stopped in bounded time.** :meth:`AgentSide.stop` closes the agent's input
  (so its pending turns are cancelled), waits ``close_timeout`` seconds for it
  to finish, then cancels it. The agent ending on its own is reported
  (``on_end``): its connection ends with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from .._waits import within
from ..agent.connection import Agent, AgentSideConnection
from ..protocol.errors import ConnectionClosedError
from ..protocol.framing import Oversize
from ..store.base import NEW_SESSION_OWNER, NewSessionOwner
from ..transports.base import Transport
from ..transports.queue import MessageQueue
from .admission import Admitted
from .limits import Limits

log = logging.getLogger("acpwire.server")


@runtime_checkable
class ConnectionServer(Protocol):
    """Anything that serves one ACP connection over a transport (an ``AgentApp`` does)."""

    async def serve(self, transport: Transport) -> None: ...


AgentTarget = ConnectionServer | Callable[[], Agent]
"""What the endpoint hosts: an ``AgentApp``/bridge (``.serve(transport)``) or an ``Agent`` factory."""

ServeFunction = Callable[[Transport], Awaitable[None]]


def _require_agent(agent: object) -> Agent:
    """Check at run time what a factory (user code, maybe untyped) returned."""
    if not isinstance(agent, Agent):
        raise TypeError(f"the agent factory returned {type(agent).__name__}, not an Agent")
    return agent


def serve_function(target: AgentTarget) -> ServeFunction:
    """How to serve one connection with ``target``."""
    if isinstance(target, ConnectionServer):
        return target.serve
    if callable(target):
        factory = target

        async def serve(transport: Transport) -> None:
            agent = _require_agent(factory())
            await AgentSideConnection(agent, transport).serve()

        return serve
    raise TypeError("expected an AgentApp, an object with serve(transport), or an Agent factory")


class AgentStalled(ConnectionClosedError):
    """The agent's queue stayed full for ``stall_timeout`` seconds: it has failed."""

    def __init__(self) -> None:
        super().__init__("the agent stopped reading", broken=True)


class AgentSide:
    """The agent's transport on a remote connection, and the task serving the agent on it.

    The agent reads the client's messages from a bounded queue; an agent on acpwire's
    engine takes them straight from the producer while nothing is queued (``push_to``,
    transports/base.py). What it sends goes to ``deliver`` in the sending task: no queue
    and pump task between the agent and the client's stream. Each saves an event-loop
    turn per message.
    """

    def __init__(
        self,
        name: str,
        limits: Limits,
        deliver: Callable[[bytes], Awaitable[None]],
        on_end: Callable[[], None],
    ) -> None:
        self._name = name
        self._inbox = MessageQueue(limits.queue_messages, limits.queue_bytes)
        self.max_message_size = limits.max_message_size
        self._stall_timeout = limits.stall_timeout
        self._deliver = deliver
        self._on_end = on_end
        self._sending = asyncio.Lock()
        self._closed = False
        self._sink: Callable[[bytes], bool] | None = None
        self._pushing = False
        self._task: asyncio.Task[None] | None = None

    def start(self, serve: ServeFunction, new_session_owner: NewSessionOwner | None) -> None:
        """Serve the agent on this transport, in a task of its own."""
        self._task = asyncio.ensure_future(self._run(serve, new_session_owner))

    async def _run(self, serve: ServeFunction, new_session_owner: NewSessionOwner | None) -> None:
        # An agent in this process may write this principal's claim with the session
        # row it creates (one statement; see owners.py). This task's context is its own.
        NEW_SESSION_OWNER.set(new_session_owner)
        try:
            await serve(self)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("agent for connection %s failed", self._name)
        finally:
            await self.close()

    # -- the endpoint's side: the client's admitted messages ---------------------------

    def has_room(self, size: int) -> bool:
        """Whether :meth:`offer` would take a message of ``size`` bytes now."""
        return self._inbox.has_room(size)

    def offer(self, admitted: Admitted) -> bool:
        """Hand an admitted message to the agent without waiting: to its engine when
        nothing is queued, else into the queue if there is room; ``False`` if neither."""
        message = admitted.body
        inbox, sink = self._inbox, self._sink
        if (
            sink is not None
            and not inbox
            and not inbox.ended
            and not self._pushing
            and len(message) <= self.max_message_size
        ):
            self._pushing = True
            try:
                if sink(message):
                    return True
            finally:
                self._pushing = False
        return inbox.try_put(message)

    async def hand(self, admitted: Admitted) -> None:
        """:meth:`offer`, else wait for room; raises :class:`AgentStalled` when the agent
        took nothing for ``stall_timeout`` seconds, :class:`ConnectionClosedError` when
        its input has ended."""
        if self.offer(admitted):
            return  # the usual case: the agent takes it, or there is room, no timer needed
        try:
            accepted = await within(self._inbox.put(admitted.body), self._stall_timeout)
        except asyncio.TimeoutError:
            raise AgentStalled from None
        if not accepted:
            raise ConnectionClosedError("the connection has ended")

    async def stop(self, grace: float) -> None:
        """End the agent's input, give the agent ``grace`` seconds to finish, then cancel it."""
        self._inbox.end()
        task = self._task
        if task is None:
            return
        try:
            await within(asyncio.shield(task), grace)
        except (asyncio.TimeoutError, Exception):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    # -- the transport the agent uses (transports/base.py) -------------------------------

    def push_to(self, sink: Callable[[bytes], bool]) -> None:
        self._sink = sink

    async def receive(self) -> bytes | Oversize | None:
        item = await self._inbox.get()
        if item is not None and len(item) > self.max_message_size:
            return Oversize(len(item))
        return item

    async def send(self, message: bytes) -> None:
        if self._closed:
            raise ConnectionClosedError("the agent's side of the connection is closed")
        if len(message) > self.max_message_size:
            log.warning(
                "connection %s: dropped an oversize message (%d bytes) from the agent",
                self._name,
                len(message),
            )
            return
        async with self._sending:
            await self._deliver(message)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._on_end()
