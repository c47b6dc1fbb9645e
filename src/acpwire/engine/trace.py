"""Trace context along a request chain, in both roles (docs/protocol-currency.md).

When a request arrives with a valid ``traceparent`` in its ``_meta``
(:mod:`acpwire.protocol.trace_context`), the connection makes it the *current
trace* of the task that handles the request. Every message the connection
sends while it is current gets it in its ``_meta``: the agent's
``session/update``, ``fs/*``, ``terminal/*`` and ``session/request_permission``
during a traced ``session/prompt``, and whatever the client sends while
answering one of those. Tasks started from the handler (a turn's handler task)
inherit it, as context variables do. ``use_trace`` starts a chain by hand.

Cost when unused: one context variable read per outgoing message, and one
attribute read per incoming request (its decoded ``_meta``).

A :class:`RequestTracer` (the OpenTelemetry integration, :mod:`acpwire.otel`)
can wrap the handling of every incoming request: it sees the method, the
params and the incoming context, and may make its own span's context current
so that the chain continues from it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Generator
from contextvars import ContextVar
from typing import Any, Protocol

from ..protocol.trace_context import TraceContext

__all__ = ["RequestTracer", "current_trace", "set_request_tracer", "use_trace"]

current_trace: ContextVar[TraceContext | None] = ContextVar("acpwire_trace", default=None)
"""The trace context of the request chain the running task belongs to (None: untraced)."""


class RequestTracer(Protocol):
    """Wraps the handling of each incoming request (the OpenTelemetry integration)."""

    async def handle(
        self,
        connection: str,
        method: str,
        params: Any,
        incoming: TraceContext | None,
        handler: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        """Run ``handler(params)`` and return its result, exceptions passed on."""
        ...


class _Hooks:
    tracer: RequestTracer | None = None


hooks = _Hooks()
"""What the engine reads per request; changed by :func:`set_request_tracer` only."""


def set_request_tracer(tracer: RequestTracer | None) -> RequestTracer | None:
    """Install ``tracer`` for every connection of this process (None removes it);
    returns the one it replaces."""
    previous, hooks.tracer = hooks.tracer, tracer
    return previous


@contextlib.contextmanager
def use_trace(trace: TraceContext | str | None) -> Generator[TraceContext | None, None, None]:
    """Make ``trace`` (a context or a ``traceparent``) current in this block: the messages
    sent in it carry it. None stops propagation in the block."""
    if isinstance(trace, str):
        trace = TraceContext(trace)
    token = current_trace.set(trace)
    try:
        yield trace
    finally:
        current_trace.reset(token)
