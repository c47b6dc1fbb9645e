"""Where a remote connection is in its life: one state, moved along one table.

A connection is :attr:`State.OPEN` from the moment it is made (its agent starts
later, on ``initialize``). A WebSocket connection whose client can resume it
(:attr:`~.connection.RemoteConnection.resumable`) and whose socket dropped is
:attr:`State.LINGERING` for ``Limits.resume_timeout`` seconds: a client that
comes back makes it open again; otherwise it ends. Ending is
:attr:`State.ENDING` while the agent is being stopped (teardown, in
:meth:`~.connection.RemoteConnection.terminate`), then :attr:`State.ENDED`. The
legal moves are :data:`MOVES`, and :meth:`Lifecycle.move` is the only way
the state changes.

**Failure is never a clean end.** Why a connection ended is kept with it
(:data:`EndReason`): an end the server chose (DELETE, client gone, idle
timeout, shutdown) is clean; the agent ending on its own or taking no input
is a failure (:attr:`Lifecycle.failed`), which its streams show (WebSocket
close 1011, SSE ``event: error``).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Coroutine
from typing import Any, Literal

EndReason = Literal["closed", "client gone", "idle", "shutdown", "agent ended", "agent stalled"]
FAILURES: frozenset[EndReason] = frozenset({"agent ended", "agent stalled"})
"""End reasons that are the agent's failure, not anyone's choice."""


class State(enum.Enum):
    OPEN = "open"
    """Serving its client (with an agent once ``initialize`` came)."""
    LINGERING = "lingering"
    """(WebSocket) Its socket dropped; waiting for the client to resume it."""
    ENDING = "ending"
    """Teardown under way: no client message is taken any more."""
    ENDED = "ended"
    """Its agent has stopped and its streams have ended."""


MOVES: dict[State, frozenset[State]] = {
    State.OPEN: frozenset({State.LINGERING, State.ENDING}),
    State.LINGERING: frozenset({State.OPEN, State.ENDING}),
    State.ENDING: frozenset({State.ENDED}),
    State.ENDED: frozenset(),
}
"""Every legal change of state."""


class Lifecycle:
    """One connection's :class:`State`, why it ended, and its linger timer."""

    def __init__(self) -> None:
        self.state = State.OPEN
        self.end_reason: EndReason | None = None
        self.closed = asyncio.Event()
        """Set once the connection has :attr:`State.ENDED`."""
        self._linger: asyncio.Task[None] | None = None

    def move(self, to: State) -> None:
        """Change state along :data:`MOVES`; any other change is a bug in the caller."""
        if to not in MOVES[self.state]:
            raise RuntimeError(f"a connection cannot go from {self.state.value} to {to.value}")
        self.state = to

    @property
    def ending(self) -> bool:
        """Teardown has begun (or is over)."""
        return self.state is State.ENDING or self.state is State.ENDED

    @property
    def failed(self) -> bool:
        """The connection ended because its agent failed, not by anyone's choice."""
        return self.end_reason in FAILURES

    def linger(self, timeout: float, end: Callable[[], Coroutine[Any, Any, None]]) -> bool:
        """Wait ``timeout`` seconds for a resume, then run ``end()``; ``False`` (nothing
        done) unless the connection was open."""
        if self.state is not State.OPEN:
            return False
        self.move(State.LINGERING)

        async def wait_then_end() -> None:
            await asyncio.sleep(timeout)
            await end()

        self._linger = asyncio.ensure_future(wait_then_end())
        return True

    def resume(self) -> None:
        """A client came back: the connection is open again (no-op unless lingering)."""
        if self.state is State.LINGERING:
            self._stop_linger()
            self.move(State.OPEN)

    def begin_end(self, reason: EndReason) -> bool:
        """Start teardown for ``reason``; ``False`` if it had begun already."""
        if self.ending:
            return False
        self._stop_linger()
        self.move(State.ENDING)
        self.end_reason = reason
        return True

    def finish(self) -> None:
        """Teardown is over."""
        self.move(State.ENDED)
        self.closed.set()

    def _stop_linger(self) -> None:
        task, self._linger = self._linger, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
