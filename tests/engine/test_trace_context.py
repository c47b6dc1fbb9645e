"""W3C trace context in ``_meta`` along a request chain, in both roles.

A traced ``session/prompt`` makes every message the agent sends while handling it
carry the same ``traceparent``/``tracestate``/``baggage``; the client's messages
sent while it answers one of those carry it too. Untraced requests, and whatever
follows a traced one, carry nothing. Invalid or oversized context is not passed on.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.agent.connection import Agent, AgentSideConnection
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.engine.trace import current_trace, use_trace
from acpwire.protocol.trace_context import MAX_TRACESTATE, TraceContext, with_trace
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports import memory_pair

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
STATE = "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"


class ChainAgent(Agent):
    """During a prompt: an update, a permission request, a file read and an extension
    notification; the client's extension notification is recorded."""

    def __init__(self) -> None:
        self.notes: list[dict[str, Any]] = []
        self.seen: list[TraceContext | None] = []

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(protocol_version=1)

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id="sess_1")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        self.seen.append(current_trace.get())
        client = self.client
        update = s.AgentMessageChunk(content=s.TextContent(text="working"))
        await client.session_update(params.session_id, update)
        await client.request_permission(
            params.session_id,
            s.ToolCallUpdate(tool_call_id="t1", title="Read"),
            [s.PermissionOption(option_id="ok", name="OK", kind="allow_once")],
        )
        await client.read_text_file(params.session_id, "/work/notes.txt")
        await client.ext_notification("_chain/agent", {"step": "done"})
        return s.PromptResponse(stop_reason="end_turn")

    async def ext_notification(self, method: str, params: Any) -> None:
        self.notes.append(params)


class ChainClient(Client):
    """Answers permission by first telling the agent, through an extension notification."""

    def capabilities(self) -> s.ClientCapabilities:
        return s.ClientCapabilities(
            fs=s.FileSystemCapabilities(read_text_file=True, write_text_file=False)
        )

    async def session_update(self, params: s.SessionNotification) -> None:
        pass

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        await self.agent.ext_notification("_chain/client", {"asked": params.tool_call.tool_call_id})
        return s.RequestPermissionResponse(outcome=s.SelectedPermissionOutcome(option_id="ok"))

    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        return s.ReadTextFileResponse(content="notes")


class Pair:
    def __init__(self, agent: ChainAgent, conn: ClientSideConnection, log: WireLog) -> None:
        self.agent, self.conn, self.log = agent, conn, log

    def traces(self, direction: str, since: int = 0) -> list[tuple[str, object]]:
        """(method or "result", _meta trace keys) of the messages one way, from entry ``since``."""
        out: list[tuple[str, object]] = []
        for way, message in self.log.entries[since:]:
            if way != direction:
                continue
            params = message.get("params", message.get("result"))
            meta = params.get("_meta") if isinstance(params, dict) else None
            keys = {k: v for k, v in (meta or {}).items() if k in ("traceparent", "tracestate")}
            out.append((message.get("method", "result"), keys or None))
        return out


@pytest.fixture
async def pair() -> AsyncIterator[Pair]:
    a, b = memory_pair()
    agent = ChainAgent()
    agent_conn = AgentSideConnection(agent, a)
    agent_conn.start()
    log = WireLog()
    conn = ClientSideConnection(ChainClient(), RecordingTransport(b, log))
    await asyncio.wait_for(conn.initialize(), TIMEOUT)
    await conn.agent.new_session("/work")
    yield Pair(agent, conn, log)
    await conn.close()
    await agent_conn.close()


async def test_every_message_of_a_traced_prompt_chain_carries_its_trace_context(
    pair: Pair, schema_validator: SchemaValidator
) -> None:
    start = len(pair.log.entries)
    with use_trace(TraceContext(TP, STATE, "user=alice")):
        await asyncio.wait_for(pair.conn.agent.prompt("sess_1", "go"), TIMEOUT)
    trace = {"traceparent": TP, "tracestate": STATE}
    # What the agent sent during the prompt, its answer excepted.
    assert pair.traces("received", start) == [
        ("session/update", trace),
        ("session/request_permission", trace),
        ("fs/read_text_file", trace),
        ("_chain/agent", trace),
        ("result", None),
    ]
    # What the client sent: the prompt, then (while answering permission) its note.
    assert pair.traces("sent", start)[:2] == [("session/prompt", trace), ("_chain/client", trace)]
    assert pair.agent.seen == [TraceContext(TP, STATE, "user=alice")]
    sent_meta = [m["params"]["_meta"] for w, m in pair.log.entries[start:] if "params" in m]
    assert all(meta["baggage"] == "user=alice" for meta in sent_meta)
    schema_validator.validate_conversation(pair.log.sent, pair.log.received)


async def test_an_untraced_prompt_after_a_traced_one_carries_nothing(pair: Pair) -> None:
    with use_trace(TP):
        await asyncio.wait_for(pair.conn.agent.prompt("sess_1", "traced"), TIMEOUT)
    start = len(pair.log.entries)
    await asyncio.wait_for(pair.conn.agent.prompt("sess_1", "plain"), TIMEOUT)
    assert all(keys is None for _, keys in pair.traces("received", start))
    assert all(keys is None for _, keys in pair.traces("sent", start))
    assert pair.agent.seen[-1] is None


@pytest.mark.parametrize(
    "meta",
    [
        {"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"},
        {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"},
        {"traceparent": "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
        {"traceparent": TP.upper()},
        {"traceparent": TP + "-extra"},
        {"traceparent": 42},
        {"tracestate": STATE},
    ],
)
async def test_an_invalid_traceparent_is_not_passed_on(pair: Pair, meta: dict[str, Any]) -> None:
    start = len(pair.log.entries)
    params = s.PromptRequest(
        session_id="sess_1", prompt=[s.TextContent(text="go")], meta={**meta, "x": 1}
    )
    await asyncio.wait_for(pair.conn.connection.request("session/prompt", params), TIMEOUT)
    assert all(keys is None for _, keys in pair.traces("received", start))
    assert pair.agent.seen[-1] is None


async def test_an_oversized_tracestate_is_dropped_and_the_traceparent_kept(pair: Pair) -> None:
    """A peer cannot make every message of the chain carry kilobytes it chose."""
    start = len(pair.log.entries)
    huge = "k=" + "v" * MAX_TRACESTATE
    params = s.PromptRequest(
        session_id="sess_1",
        prompt=[s.TextContent(text="go")],
        meta={"traceparent": TP, "tracestate": huge, "baggage": "b" * 100_000},
    )
    await asyncio.wait_for(pair.conn.connection.request("session/prompt", params), TIMEOUT)
    received = [m for w, m in pair.log.entries[start:] if w == "received" and "method" in m]
    assert received and all(m["params"]["_meta"] == {"traceparent": TP} for m in received)


def test_with_trace_adds_to_existing_meta_and_keeps_a_traceparent_already_there() -> None:
    trace = TraceContext(TP, STATE)
    update = s.SessionNotification(
        session_id="s",
        update=s.AgentMessageChunk(content=s.TextContent(text="x")),
        meta={"zed.dev/debug": True},
    )
    traced = with_trace(update, trace)
    assert traced.meta == {"zed.dev/debug": True, "traceparent": TP, "tracestate": STATE}
    assert update.meta == {"zed.dev/debug": True}  # the caller's object is not changed
    own = "00-11111111111111111111111111111111-2222222222222222-00"
    assert with_trace({"_meta": {"traceparent": own}}, trace) == {"_meta": {"traceparent": own}}
    assert with_trace(None, trace) == {"_meta": {"traceparent": TP, "tracestate": STATE}}
    assert with_trace({"a": 1}, trace) == {"a": 1, "_meta": trace.meta()}


def test_trace_context_reads_its_fields_and_refuses_a_bad_traceparent() -> None:
    trace = TraceContext(TP)
    assert (trace.trace_id, trace.parent_id, trace.sampled) == (
        "4bf92f3577b34da6a3ce929d0e0e4736",
        "00f067aa0ba902b7",
        True,
    )
    # A later version may append fields; version 00 may not.
    assert TraceContext.from_meta({"traceparent": "01" + TP[2:] + "-later"}) is not None
    with pytest.raises(ValueError, match="not a W3C traceparent"):
        TraceContext("nonsense")


async def test_a_connection_started_inside_a_traced_block_does_not_trace_later_requests() -> None:
    """The reader and worker loops must not inherit the trace of whoever started them."""
    a, b = memory_pair()
    agent = ChainAgent()
    agent_conn = AgentSideConnection(agent, a)
    conn = ClientSideConnection(ChainClient(), b)
    with use_trace(TP):
        agent_conn.start()  # the agent side's loops are started while a trace is current
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
    await conn.agent.new_session("/work")
    await asyncio.wait_for(conn.agent.prompt("sess_1", "plain"), TIMEOUT)
    assert agent.seen == [None]
    await conn.close()
    await agent_conn.close()


def test_the_otel_integration_without_opentelemetry_says_what_to_install() -> None:
    code = (
        "import sys\nsys.modules['opentelemetry'] = None\n"
        "import acpwire.otel\n"  # the module loads; using it says what is missing
        "try:\n    acpwire.otel.instrument()\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'acpwire[otel]'" in out.stdout
