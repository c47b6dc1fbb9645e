"""OpenTelemetry spans for ACP requests (``pip install 'acpwire[otel]'``).

:func:`instrument` makes every connection of the process, agent or client
side, open one span per incoming request:

* a ``SERVER`` span named after the method (``session/prompt``,
  ``fs/read_text_file`` ...), child of the W3C context the request carried in
  its ``_meta`` (:mod:`acpwire.protocol.trace_context`), or of the current
  OpenTelemetry context if it carried none;
* attributes ``rpc.system`` (``jsonrpc``), ``rpc.method``, ``acp.connection``
  (the connection's name), ``acp.session_id`` when the params or the result
  name a session, ``acp.outcome`` (``ok``, ``error`` or ``cancelled``),
  ``acp.stop_reason`` for a prompt's answer and ``rpc.jsonrpc.error_code``
  for an error answer, whose span status is then ``ERROR``.

While the handler runs, its span is the current OpenTelemetry span (spans the
handler starts are its children) and the messages the connection sends carry
the span's own ``traceparent``, so the peer's spans continue the trace.

Only the API package is needed here; the application configures the SDK
(exporters, sampling) as usual. To start a trace from a client, send the
request under the current span's context::

    with tracer.start_as_current_span("ask"), use_trace(current_trace_context()):
        await conn.agent.prompt(session_id, "hello")
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .engine.trace import RequestTracer, current_trace, set_request_tracer
from .protocol.errors import RequestError
from .protocol.trace_context import TraceContext

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

__all__ = ["OtelRequestTracer", "current_trace_context", "instrument", "uninstrument"]

INSTALL_HINT = "acpwire.otel needs the OpenTelemetry API: pip install 'acpwire[otel]'"


def _propagator() -> TraceContextTextMapPropagator:
    """The W3C propagator (imported on first use: the module loads without the extra)."""
    try:
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    return TraceContextTextMapPropagator()


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("acpwire")
    except metadata.PackageNotFoundError:  # pragma: no cover - bare checkout
        return "0"


def current_trace_context() -> TraceContext | None:
    """The current OpenTelemetry span's context as ACP trace context (None: no valid span)."""
    carrier: dict[str, str] = {}
    _propagator().inject(carrier)
    parent = carrier.get("traceparent")
    if parent is None:
        return None
    return TraceContext(parent, carrier.get("tracestate"))


class OtelRequestTracer:
    """A :class:`~acpwire.engine.trace.RequestTracer` that opens a span per request."""

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        self.propagator = _propagator()  # raises the install hint without the extra
        from opentelemetry import trace

        self.tracer = trace.get_tracer("acpwire", _version(), tracer_provider)

    async def handle(
        self,
        connection: str,
        method: str,
        params: Any,
        incoming: TraceContext | None,
        handler: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        from opentelemetry.trace import SpanKind, Status, StatusCode

        parent = self.propagator.extract(incoming.meta()) if incoming is not None else None
        attributes: dict[str, str] = {
            "rpc.system": "jsonrpc",
            "rpc.method": method,
            "acp.connection": connection,
        }
        session_id = getattr(params, "session_id", None)
        if isinstance(session_id, str):
            attributes["acp.session_id"] = session_id
        with self.tracer.start_as_current_span(
            method,
            context=parent,
            kind=SpanKind.SERVER,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            # The chain goes on from this span (if it has a valid context at all).
            own = current_trace_context()
            token = None
            if own is not None:
                baggage = incoming.baggage if incoming is not None else None
                token = current_trace.set(TraceContext(own.traceparent, own.tracestate, baggage))
            try:
                result = await handler(params)
            except asyncio.CancelledError:
                span.set_attribute("acp.outcome", "cancelled")
                raise
            except RequestError as exc:
                span.set_attribute("acp.outcome", "error")
                span.set_attribute("rpc.jsonrpc.error_code", int(exc.code))
                span.set_status(Status(StatusCode.ERROR, exc.message))
                raise
            except Exception as exc:
                span.set_attribute("acp.outcome", "error")
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
                raise
            finally:
                if token is not None:
                    current_trace.reset(token)
            span.set_attribute("acp.outcome", "ok")
            for attr, key in (("stop_reason", "acp.stop_reason"), ("session_id", "acp.session_id")):
                value = getattr(result, attr, None)
                if isinstance(value, str):
                    span.set_attribute(key, value)
            return result


def instrument(tracer_provider: TracerProvider | None = None) -> RequestTracer:
    """Open a span per incoming request on every connection of this process (see the
    module docstring); ``tracer_provider`` defaults to the global one. Returns the tracer."""
    tracer = OtelRequestTracer(tracer_provider)
    set_request_tracer(tracer)
    return tracer


def uninstrument() -> None:
    """Stop opening spans (trace context is still carried along request chains)."""
    set_request_tracer(None)
