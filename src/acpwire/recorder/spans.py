"""OpenTelemetry spans from a recording (``pip install 'acpwire[otel]'``): what a
cassette says, as a trace, with the names docs/recorder.md proposes as ACP conventions.

:class:`SpanBuilder` takes a cassette's records in order (:func:`export_cassette` feeds
it a whole file) and emits:

* one span per request, from the request's wall time to its answer's, kind ``CLIENT``
  (the span of the side that asked), named ``{method} {target}`` where the target is the
  session the request names (``session/prompt sess_1``), or just ``{method}``;
  attributes ``acp.method.name``, ``acp.request.id``, ``acp.session.id``,
  ``acp.protocol.version`` (once ``initialize`` has been answered), ``acp.peer``
  (``client`` or ``agent``: who asked), ``error.type`` (the JSON-RPC error code) with
  status ``ERROR`` for an error answer, ``acp.prompt.stop_reason`` for a prompt's answer;
* a turn (a ``session/prompt`` span) is the parent of what happens in it: the agent's
  requests of the same session (permission, files, terminals) are its child spans, its
  ``session/update`` notifications are events on it (``session/update``, with
  ``acp.update.kind``), and so is the client's ``session/cancel``; a notification with
  no turn open is a span of no length;
* the metric ``acp.client.operation.duration`` (a histogram, seconds) per answered
  request, with ``acp.method.name`` and ``error.type``.

A request never answered ends with the last record, marked ``acp.unanswered``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import msgspec

from .cassette import read_cassette
from .conversation import message_kind, session_of, update_kind

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Span, TracerProvider

__all__ = ["SpanBuilder", "export_cassette"]

INSTALL_HINT = "spans from a recording need the OpenTelemetry API: pip install 'acpwire[otel]'"


def _ns(wall: object) -> int | None:
    return int(float(wall) * 1e9) if isinstance(wall, (int, float)) else None


@dataclass
class _Open:
    span: Span
    method: str
    session: str | None
    start_ns: int


class SpanBuilder:
    """Spans and metrics of records fed in recorded order (module docstring)."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        try:
            from opentelemetry import metrics, trace
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(INSTALL_HINT) from exc
        self.tracer = trace.get_tracer("acpwire.recorder", tracer_provider=tracer_provider)
        meter = metrics.get_meter("acpwire.recorder", meter_provider=meter_provider)
        self.duration = meter.create_histogram(
            "acp.client.operation.duration",
            unit="s",
            description="Time from an ACP request to its answer, as recorded",
        )
        self.protocol_version: int | None = None
        self._open: dict[tuple[str, str, str], _Open] = {}
        self._turns: dict[str, _Open] = {}
        self._last_ns = 0

    def feed(self, record: dict[str, Any]) -> None:
        """One cassette record (others than messages only move the clock)."""
        wall = _ns(record.get("wall"))
        if wall is not None:
            self._last_ns = max(self._last_ns, wall)
        msg = record.get("msg")
        sender = record.get("from")
        if record.get("type") != "message" or not isinstance(msg, dict) or wall is None:
            return
        msg = cast("dict[str, Any]", msg)
        if sender not in ("client", "agent"):
            return
        where = record.get("transport")
        route = str(cast("dict[str, Any]", where).get("connection", "")) if where else ""
        kind = message_kind(msg)
        if kind == "request":
            self._request(sender, route, msg, wall)
        elif kind == "response":
            self._response(sender, route, msg, wall)
        else:
            self._notification(sender, msg, wall)

    def _attributes(self, method: str, session: str | None, sender: str) -> dict[str, Any]:
        attributes: dict[str, Any] = {"acp.method.name": method, "acp.peer": sender}
        if session:
            attributes["acp.session.id"] = session
        if self.protocol_version is not None:
            attributes["acp.protocol.version"] = self.protocol_version
        return attributes

    def _request(self, sender: str, route: str, msg: dict[str, Any], wall: int) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind

        method = str(msg["method"])
        session = session_of(msg)
        turn = self._turns.get(session) if session and sender == "agent" else None
        context = trace.set_span_in_context(turn.span) if turn is not None else None
        attributes = self._attributes(method, session, sender)
        attributes["acp.request.id"] = msgspec.json.encode(msg["id"]).decode()
        span = self.tracer.start_span(
            f"{method} {session}" if session else method,
            context=context,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            start_time=wall,
        )
        opened = _Open(span, method, session, wall)
        self._open[(sender, route, repr(msg["id"]))] = opened
        if method == "session/prompt" and session:
            self._turns[session] = opened

    def _response(self, sender: str, route: str, msg: dict[str, Any], wall: int) -> None:
        from opentelemetry.trace import Status, StatusCode

        asker = "agent" if sender == "client" else "client"
        opened = self._open.pop((asker, route, repr(msg.get("id"))), None)
        if opened is None:
            return
        span = opened.span
        metric = {"acp.method.name": opened.method}
        error = msg.get("error")
        result = msg.get("result")
        if isinstance(error, dict):
            code = str(cast("dict[str, Any]", error).get("code"))
            span.set_attribute("error.type", code)
            metric["error.type"] = code
            span.set_status(Status(StatusCode.ERROR, str(error.get("message", ""))))
        elif isinstance(result, dict):
            result = cast("dict[str, Any]", result)
            if opened.method == "initialize" and isinstance(result.get("protocolVersion"), int):
                self.protocol_version = result["protocolVersion"]
                span.set_attribute("acp.protocol.version", self.protocol_version)
            if opened.method == "session/new" and isinstance(result.get("sessionId"), str):
                span.set_attribute("acp.session.id", result["sessionId"])
            if isinstance(result.get("stopReason"), str):
                span.set_attribute("acp.prompt.stop_reason", result["stopReason"])
        span.end(end_time=wall)
        self.duration.record(max(0, wall - opened.start_ns) / 1e9, metric)
        if opened.method == "session/prompt" and opened.session:
            if self._turns.get(opened.session) is opened:
                del self._turns[opened.session]

    def _notification(self, sender: str, msg: dict[str, Any], wall: int) -> None:
        from opentelemetry.trace import SpanKind

        method = str(msg["method"])
        session = session_of(msg)
        attributes = self._attributes(method, session, sender)
        update = update_kind(msg)
        if update:
            attributes["acp.update.kind"] = update
        turn = self._turns.get(session) if session else None
        if turn is not None:
            turn.span.add_event(method, attributes, timestamp=wall)
            return
        span = self.tracer.start_span(
            f"{method} {session}" if session else method,
            kind=SpanKind.PRODUCER,
            attributes=attributes,
            start_time=wall,
        )
        span.end(end_time=wall)

    def close(self) -> None:
        """End what is still open at the time of the last record."""
        for opened in self._open.values():
            opened.span.set_attribute("acp.unanswered", True)
            opened.span.end(end_time=max(self._last_ns, opened.start_ns))
        self._open.clear()
        self._turns.clear()


def export_cassette(
    path: str | os.PathLike[str],
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
) -> int:
    """Emit the spans and metrics of the cassette at ``path`` (module docstring) through
    the given providers (default: the global ones); returns how many messages it read."""
    cassette = read_cassette(path)
    builder = SpanBuilder(tracer_provider, meter_provider)
    for record in cassette.records:
        builder.feed(record)
    builder.close()
    return len(cassette.messages)
