"""OpenTelemetry spans from a recording: a demo session recorded in process, exported
through the SDK's in-memory exporter and metric reader, and read back: one span per
request with the proposed ``acp.*`` names and the recorded times, turns as the parents
of the agent's requests and of their updates as events, and the duration metric."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK is not installed")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from acpwire.recorder import read_cassette
from acpwire.recorder.spans import export_cassette

from .test_viewer import NOTES, record_demo


async def test_a_recorded_session_becomes_spans_turns_and_a_duration_metric(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(NOTES)
    cassette = tmp_path / "demo.jsonl"
    await record_demo(cassette, workspace, tmp_path / "demo.sqlite3")
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])

    export_cassette(cassette, tracer_provider, meter_provider)

    spans = exporter.get_finished_spans()
    recorded = read_cassette(cassette).messages
    requests = [m for m in recorded if "method" in m["msg"] and "id" in m["msg"]]
    answered = [s for s in spans if s.kind == SpanKind.CLIENT]
    assert len(answered) == len(requests)
    by_name = {s.name: s for s in reversed(answered)}  # the first of each name
    [prompt_request] = [m for m in requests if m["msg"]["method"] == "session/prompt"][:1]
    session = prompt_request["msg"]["params"]["sessionId"]
    prompts = [s for s in answered if s.name == f"session/prompt {session}"]
    assert len(prompts) == 4
    first = prompts[0]
    attributes = dict(first.attributes or {})
    assert attributes["acp.method.name"] == "session/prompt"
    assert attributes["acp.session.id"] == session
    assert attributes["acp.protocol.version"] == 1
    assert attributes["acp.peer"] == "client"
    assert attributes["acp.prompt.stop_reason"] == "end_turn"
    assert attributes["acp.request.id"] == str(prompt_request["msg"]["id"])
    # The span lasts what the recording says the request took.
    [answer] = [
        m
        for m in recorded
        if m["from"] == "agent"
        and m["msg"].get("id") == prompt_request["msg"]["id"]
        and "method" not in m["msg"]
    ]
    assert first.start_time == int(prompt_request["wall"] * 1e9)
    assert first.end_time == int(answer["wall"] * 1e9)
    # The agent's requests are children of their turn; its updates are the turn's events.
    read = by_name[f"fs/read_text_file {session}"]
    assert read.parent is not None and read.parent.span_id == first.context.span_id
    assert dict(read.attributes or {})["acp.peer"] == "agent"
    permission = by_name[f"session/request_permission {session}"]
    assert permission.parent is not None and permission.parent.span_id == prompts[1].context.span_id
    kinds = [dict(e.attributes or {}).get("acp.update.kind") for e in first.events]
    assert "agent_message_chunk" in kinds and "tool_call" in kinds
    assert all(e.name == "session/update" for e in first.events)
    assert by_name["initialize"].parent is None
    # One duration per answered request.
    data = reader.get_metrics_data()
    [metric] = [
        m
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "acp.client.operation.duration"
    ]
    assert sum(p.count for p in metric.data.data_points) == len(requests)
    methods = {dict(p.attributes or {})["acp.method.name"] for p in metric.data.data_points}
    assert {"initialize", "session/new", "session/prompt", "fs/read_text_file"} <= methods
