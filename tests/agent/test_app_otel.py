"""OpenTelemetry spans per request (acpwire[otel]), read from the SDK's in-memory exporter.

Both ends run in this process, so both are instrumented: the agent's span for a
traced ``session/prompt`` continues the client's trace, and the client's spans for
the agent's ``fs/read_text_file`` and ``session/request_permission`` are its children.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _app_harness import TestClient, wired

pytest.importorskip(
    "opentelemetry.sdk", reason="the OpenTelemetry SDK is not installed (dev extra)"
)

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from acpwire.agent.app import AgentApp, Turn
from acpwire.engine.trace import use_trace
from acpwire.otel import current_trace_context, instrument, uninstrument
from acpwire.protocol.errors import ErrorCode, RequestError
from acpwire.testing import SchemaValidator

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TP = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(provider)
    yield exporter
    uninstrument()
    provider.shutdown()


def tool_app(root: Path) -> AgentApp:
    app = AgentApp("otel")

    @app.prompt
    async def handle(turn: Turn) -> None:
        text = await turn.read_file(str(root / "notes.txt"))
        async with turn.tool("Edit notes.txt", kind="edit") as call:
            await call.require_permission()
        await turn.say(text)

    return app


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == name]


def traceparent_of(span: ReadableSpan) -> str:
    ctx = span.get_span_context()
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-01"


async def test_a_traced_prompt_gets_a_span_whose_children_are_the_clients_spans(
    tmp_path: Path, spans: InMemorySpanExporter, schema_validator: SchemaValidator
) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    async with wired(tool_app(tmp_path), TestClient(tmp_path), schema_validator) as w:
        sid = await w.new_session(str(tmp_path))
        start = len(w.log.entries)
        with use_trace(TP):
            await w.agent.prompt(sid, "go")
        sent = [m for way, m in w.log.entries[start:] if way == "sent" and "method" in m]
    (prompt,) = named(spans, "session/prompt")
    assert prompt.kind == SpanKind.SERVER
    assert prompt.parent is not None
    assert (f"{prompt.context.trace_id:032x}", f"{prompt.parent.span_id:016x}") == (
        TRACE_ID,
        PARENT_ID,
    )
    assert prompt.attributes is not None
    assert prompt.attributes["rpc.method"] == "session/prompt"
    assert prompt.attributes["acp.session_id"] == sid
    assert prompt.attributes["acp.outcome"] == "ok"
    assert prompt.attributes["acp.stop_reason"] == "end_turn"
    # The agent's messages of the turn carry the prompt span's own context ...
    assert sent and {m["params"]["_meta"]["traceparent"] for m in sent} == {traceparent_of(prompt)}
    # ... and the client's spans for them are its children.
    for name in ("fs/read_text_file", "session/request_permission"):
        (child,) = named(spans, name)
        assert child.parent is not None and child.parent.span_id == prompt.context.span_id
        assert child.context.trace_id == prompt.context.trace_id
        assert child.attributes is not None and child.attributes["acp.session_id"] == sid


async def test_an_error_answer_marks_the_span_with_its_code(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    async with wired(tool_app(tmp_path)) as w:
        with pytest.raises(RequestError):
            await w.agent.prompt("sess_missing", "go")
    (span,) = named(spans, "session/prompt")
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes is not None
    assert span.attributes["acp.outcome"] == "error"
    assert span.attributes["rpc.jsonrpc.error_code"] == ErrorCode.RESOURCE_NOT_FOUND
    assert span.parent is None  # an untraced request starts a trace of its own


async def test_session_new_records_the_new_session_id_and_a_client_can_start_the_trace(
    tmp_path: Path, spans: InMemorySpanExporter
) -> None:
    from opentelemetry import trace

    tracer = trace.get_tracer("test", tracer_provider=spans_provider(spans))
    async with wired(tool_app(tmp_path)) as w:
        with tracer.start_as_current_span("user asks") as root, use_trace(current_trace_context()):
            sid = await w.new_session(str(tmp_path))
    (span,) = named(spans, "session/new")
    assert span.attributes is not None and span.attributes["acp.session_id"] == sid
    assert span.parent is not None and span.parent.span_id == root.get_span_context().span_id


def spans_provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider
