"""The engine's behaviour suite, run on the in-memory pair and again over a real
subprocess on real pipes. Requirement ids from shared/spec/requirements.json."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.agent.connection import AgentSideConnection
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.protocol.errors import (
    CapabilityError,
    ConnectionClosedError,
    ErrorCode,
    InvalidParams,
    MethodNotFound,
    RequestCancelled,
    RequestError,
    VersionMismatchError,
)
from acpwire.testing import RecordingTransport, WireLog
from acpwire.transports import memory_pair, spawn
from acpwire.transports.base import Transport

from .agent_program import EngineTestAgent

PROGRAM = Path(__file__).with_name("agent_program.py")


class RecordingClient(Client):
    def __init__(self) -> None:
        self.updates: list[s.SessionUpdate] = []
        self.permission_gate: asyncio.Event | None = None
        self.asked = asyncio.Event()  # a permission request has come
        self.notes: list[tuple[str, Any]] = []

    def capabilities(self) -> s.ClientCapabilities:
        return s.ClientCapabilities(
            fs=s.FileSystemCapabilities(read_text_file=True, write_text_file=False)
        )

    async def session_update(self, params: s.SessionNotification) -> None:
        self.updates.append(params.update)

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        self.asked.set()
        if self.permission_gate is not None:
            await self.permission_gate.wait()
        return s.RequestPermissionResponse(
            outcome=s.SelectedPermissionOutcome(option_id=params.options[0].option_id)
        )

    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        return s.ReadTextFileResponse(content=Path(params.path).read_text())

    async def ext_notification(self, method: str, params: Any) -> None:
        self.notes.append((method, params))

    def texts(self) -> list[str]:
        return [
            u.content.text
            for u in self.updates
            if isinstance(u, s.AgentMessageChunk) and isinstance(u.content, s.TextContent)
        ]


class Link:
    """A raw transport to the test agent, however it runs."""

    def __init__(self, transport: Transport, agent: EngineTestAgent | None, closer: Any) -> None:
        self.transport = transport
        self.agent = agent
        self._closer = closer

    async def raw(self, message: bytes | str) -> Any:
        """Send one raw line and return the next message that comes back, decoded."""
        await self.transport.send(message.encode() if isinstance(message, str) else message)
        reply = await asyncio.wait_for(self.transport.receive(), TIMEOUT)
        assert isinstance(reply, bytes)
        return json.loads(reply)


# The subprocess runs (a real agent process over real pipes) are slow: left out of -m "not slow".
@pytest.fixture(params=["memory", pytest.param("subprocess", marks=pytest.mark.slow)])
async def link(request: pytest.FixtureRequest) -> AsyncIterator[Link]:
    if request.param == "memory":
        a, b = memory_pair()
        agent = EngineTestAgent()
        side = AgentSideConnection(agent, a)
        side.start()
        yield Link(b, agent, side.close)
        await side.close()
        await b.close()
    else:
        transport = await spawn(sys.executable, [str(PROGRAM)])
        yield Link(transport, None, transport.close)
        await transport.close()


@pytest.fixture
async def client(
    link: Link,
) -> AsyncIterator[tuple[ClientSideConnection, RecordingClient, WireLog]]:
    recorder = RecordingTransport(link.transport)
    handler = RecordingClient()
    conn = ClientSideConnection(handler, recorder)
    await asyncio.wait_for(conn.initialize(), TIMEOUT)
    yield conn, handler, recorder.log
    await conn.close()


async def new_session(conn: ClientSideConnection) -> str:
    return (await conn.agent.new_session("/tmp")).session_id


async def test_updates_sent_before_a_response_are_all_handled_before_it_resolves(
    client: Any, schema_validator: Any
) -> None:
    """PROMPT ordering: every session/update of a turn precedes its response (SESSION-UPDATE order)."""
    conn, handler, log = client
    sid = await new_session(conn)
    result = await asyncio.wait_for(conn.agent.prompt(sid, "stream 500"), TIMEOUT)
    assert result.stop_reason == "end_turn"
    assert handler.texts() == [f"chunk {i}" for i in range(500)]
    schema_validator.validate_conversation(log.sent, log.received)


async def test_a_slow_prompt_does_not_block_other_requests_or_cancel(client: Any) -> None:
    """Requests are handled concurrently; session/cancel is processed mid-turn (PROMPT-CANCEL)."""
    conn, _, _ = client
    sid = await new_session(conn)
    turn = asyncio.ensure_future(conn.agent.prompt(sid, "slow"))
    other = await asyncio.wait_for(new_session(conn), TIMEOUT)
    assert other != sid
    echoed = await asyncio.wait_for(conn.agent.ext_method("_test/echo", {"n": 1}), TIMEOUT)
    assert echoed == {"echo": {"n": 1}}
    await conn.agent.cancel(sid)
    result = await asyncio.wait_for(turn, TIMEOUT)
    assert result.stop_reason == "cancelled"


async def test_both_sides_call_each_other_while_a_turn_is_running(client: Any) -> None:
    conn, handler, _ = client
    handler.permission_gate = asyncio.Event()
    sid = await new_session(conn)
    turn = asyncio.ensure_future(conn.agent.prompt(sid, "ask"))
    await asyncio.wait_for(handler.asked.wait(), TIMEOUT)
    # The agent's permission request is pending on our side; we can still call the agent.
    assert (await asyncio.wait_for(conn.agent.ext_method("_test/echo", [1]), TIMEOUT)) == {
        "echo": [1]
    }
    handler.permission_gate.set()
    result = await asyncio.wait_for(turn, TIMEOUT)
    assert result.stop_reason == "end_turn"
    assert handler.texts() == ["yes"]


async def test_cancel_request_of_an_in_flight_request_answers_request_cancelled(link: Link) -> None:
    """$/cancel_request: the handler is cancelled and the request still gets exactly one answer, -32800."""
    await link.raw('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}')
    await link.transport.send(b'{"jsonrpc":"2.0","id":"slow-1","method":"_test/sleep","params":{}}')
    await link.transport.send(
        b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"slow-1"}}'
    )
    reply = json.loads(await asyncio.wait_for(link.transport.receive(), TIMEOUT))  # type: ignore[arg-type]
    assert reply["id"] == "slow-1"
    assert reply["error"]["code"] == ErrorCode.REQUEST_CANCELLED


class HoldingTransport:
    """The agent's side of a memory pair whose send of one answer, once written, waits
    (a socket that is full, a stream whose queue is busy) until the test releases it."""

    def __init__(self, inner: Transport, held: bytes) -> None:
        self.inner, self.held = inner, held
        self.answering, self.release = asyncio.Event(), asyncio.Event()
        self.reads = 0  # the engine reads a message once it has handled the one before

    async def send(self, message: bytes) -> None:
        await self.inner.send(message)
        if self.held in message:
            self.answering.set()
            await self.release.wait()

    async def receive(self) -> bytes | None:
        self.reads += 1
        return await self.inner.receive()  # type: ignore[return-value]

    async def close(self) -> None:
        await self.inner.close()


async def test_a_cancel_request_that_comes_while_the_answer_is_written_adds_no_second_answer() -> (
    None
):
    """RCANCEL-001: once a request's answer is on its way it is answered; a $/cancel_request
    arriving meanwhile neither interrupts the write nor adds a -32800 after it (acp serve
    over WebSocket answered a cancelled session/new twice this way)."""
    a, b = memory_pair()
    holding = HoldingTransport(a, b'"id":"held-1"')
    side = AgentSideConnection(EngineTestAgent(), holding)
    side.start()
    try:
        await b.send(
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}'
        )
        await asyncio.wait_for(b.receive(), TIMEOUT)
        await b.send(b'{"jsonrpc":"2.0","id":"held-1","method":"_test/echo","params":[1]}')
        await asyncio.wait_for(holding.answering.wait(), TIMEOUT)
        reads = holding.reads
        await b.send(
            b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"held-1"}}'
        )
        await wait_until(lambda: holding.reads > reads, "the engine took the cancel")
        holding.release.set()
        await b.send(b'{"jsonrpc":"2.0","id":"after","method":"_test/echo","params":[2]}')
        replies = []
        while not replies or replies[-1].get("id") != "after":
            replies.append(json.loads(await asyncio.wait_for(b.receive(), TIMEOUT)))  # type: ignore[arg-type]
        assert [r["id"] for r in replies] == ["held-1", "after"], replies
        assert replies[0]["result"] == {"echo": [1]}
    finally:
        await side.close()
        await b.close()


async def test_a_handler_that_takes_over_its_cancellation_answers_it_itself(link: Link) -> None:
    """Connection.take_cancellation: the $/cancel_request reaches the handler's callback
    instead of cancelling its task, and the request is answered by the handler."""
    await link.raw('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}')
    await link.transport.send(
        b'{"jsonrpc":"2.0","id":"polite-1","method":"_test/stop_when_asked","params":{}}'
    )
    ready = json.loads(await asyncio.wait_for(link.transport.receive(), TIMEOUT))  # type: ignore[arg-type]
    assert ready["method"] == "_test/listening"  # the handler took its cancellation over
    await link.transport.send(
        b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"polite-1"}}'
    )
    reply = json.loads(await asyncio.wait_for(link.transport.receive(), TIMEOUT))  # type: ignore[arg-type]
    assert reply == {"jsonrpc": "2.0", "id": "polite-1", "result": {"stopped": "in good order"}}


async def test_abandoning_an_outgoing_request_sends_cancel_request(client: Any) -> None:
    conn, _, log = client
    call = asyncio.ensure_future(conn.agent.ext_method("_test/sleep", {}))
    sent = await wait_until(
        lambda: [m for m in log.sent if m.get("method") == "_test/sleep"], "the request is sent"
    )
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    (cancel,) = await wait_until(
        lambda: [m for m in log.sent if m.get("method") == "$/cancel_request"],
        "$/cancel_request is sent",
    )
    sent_id = sent[0]["id"]
    assert cancel["params"] == {"requestId": sent_id}


async def test_unknown_method_answers_method_not_found(client: Any) -> None:
    conn, _, _ = client
    with pytest.raises(MethodNotFound) as info:
        await conn.connection.request("session/teleport", {"sessionId": "x"})
    assert info.value.code == ErrorCode.METHOD_NOT_FOUND
    assert info.value.from_peer


async def test_unknown_extension_request_answers_method_not_found_and_notifications_are_ignored(
    client: Any,
) -> None:
    """EXT: unknown _ requests -> -32601; unknown notifications ignored."""
    conn, _, _ = client
    with pytest.raises(MethodNotFound):
        await conn.agent.ext_method("_nobody/home", {})
    await conn.agent.ext_notification("_nobody/listens", {"x": 1})
    assert (await conn.agent.ext_method("_test/echo", 1)) == {"echo": 1}


async def test_extension_notifications_reach_the_handler(client: Any) -> None:
    conn, handler, _ = client
    await conn.agent.ext_notification("_test/note", {"k": [1, 2]})
    await wait_until(lambda: handler.notes, "the agent's answering notification arrives")
    assert handler.notes == [("_test/noted", {"k": [1, 2]})]


async def test_invalid_params_answer_with_the_validation_path(client: Any) -> None:
    conn, _, _ = client
    with pytest.raises(InvalidParams) as info:
        await conn.connection.request("session/prompt", {"sessionId": 42, "prompt": []})
    assert info.value.code == ErrorCode.INVALID_PARAMS
    assert info.value.data["path"] == "$.sessionId"


async def test_a_crashing_handler_answers_internal_error_without_leaking_its_text(
    client: Any,
) -> None:
    conn, _, _ = client
    sid = await new_session(conn)
    with pytest.raises(RequestError) as info:
        await conn.agent.prompt(sid, "boom")
    assert info.value.code == ErrorCode.INTERNAL_ERROR
    assert "secret" not in json.dumps(info.value.to_wire())
    # ... and the connection carries on.
    assert (await conn.agent.prompt(sid, "done")).stop_reason == "end_turn"


async def test_a_request_for_an_unknown_session_is_refused(client: Any) -> None:
    conn, _, _ = client
    with pytest.raises(RequestError) as info:
        await conn.agent.prompt("no-such-session", "hi")
    assert info.value.code == ErrorCode.RESOURCE_NOT_FOUND


async def test_meta_passes_through_untouched(client: Any) -> None:
    conn, handler, _ = client
    sid = await new_session(conn)
    meta = {"acpwire/trace": {"nested": [1, {"deep": None}]}, "traceparent": "00-abc-def-01"}
    await conn.connection.request(
        "session/prompt",
        s.PromptRequest(session_id=sid, prompt=[s.TextContent(text="echo hi")], meta=meta),
        s.PromptResponse,
    )
    chunk = handler.updates[-1]
    assert isinstance(chunk, s.AgentMessageChunk)
    assert chunk.meta == meta


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("{not json", ErrorCode.PARSE_ERROR),
        ("[1, 2]", ErrorCode.INVALID_REQUEST),
        ('"just a string"', ErrorCode.INVALID_REQUEST),
        ('{"jsonrpc":"1.0","id":5,"method":"initialize","params":{}}', ErrorCode.INVALID_REQUEST),
    ],
)
async def test_bad_input_gets_a_clear_error_and_the_connection_stays_usable(
    link: Link, line: str, code: int
) -> None:
    reply = await link.raw(line)
    assert reply["error"]["code"] == code
    ok = await link.raw(
        '{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1}}'
    )
    assert ok["id"] == 7 and ok["result"]["protocolVersion"] == 1


async def test_an_oversize_line_is_dropped_and_the_connection_stays_usable(link: Link) -> None:
    huge = (
        b'{"jsonrpc":"2.0","method":"_test/note","params":{"x":"'
        + b"a" * (65 * 1024 * 1024)
        + b'"}}'
    )
    await link.transport.send(huge)
    ok = await link.raw(
        '{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":1}}'
    )
    assert ok["id"] == 8


async def test_string_and_integer_ids_are_both_answered_with_the_same_id(link: Link) -> None:
    for rid in ("abc", 12345678901):
        reply = await link.raw(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "initialize",
                    "params": {"protocolVersion": 1},
                }
            )
        )
        assert reply["id"] == rid


@pytest.mark.parametrize("asked", [2, 65535])
async def test_an_agent_asked_for_a_newer_version_answers_1(link: Link, asked: int) -> None:
    """INIT version negotiation: the agent answers the latest version it supports."""
    reply = await link.raw(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": asked},
            }
        )
    )
    assert reply["result"]["protocolVersion"] == 1


async def test_calls_not_allowed_by_the_peers_capabilities_fail_locally(client: Any) -> None:
    conn, _, log = client
    sent_before = len(log.sent)
    with pytest.raises(CapabilityError, match=r"sessionCapabilities\.list"):
        await conn.agent.list_sessions()
    assert len(log.sent) == sent_before


async def test_agent_reading_a_file_the_client_allows(client: Any, tmp_path: Path) -> None:
    conn, handler, _ = client
    sid = await new_session(conn)
    f = tmp_path / "hello.txt"
    f.write_text("hello from disk")
    await conn.agent.prompt(sid, f"read {f}")
    assert handler.texts()[-1] == "hello from disk"


async def test_a_stray_print_in_the_agent_does_not_corrupt_the_stream(client: Any) -> None:
    """TRANS: nothing but protocol on the agent's stdout."""
    conn, handler, _ = client
    sid = await new_session(conn)
    result = await asyncio.wait_for(conn.agent.prompt(sid, "print"), TIMEOUT)
    assert result.stop_reason == "end_turn"
    assert handler.texts() == ["printed"]


async def test_the_peer_closing_mid_request_fails_pending_calls_at_once(link: Link) -> None:
    handler = RecordingClient()
    recorder = RecordingTransport(link.transport)
    conn = ClientSideConnection(handler, recorder)
    await conn.initialize()
    sid = await new_session(conn)
    turn = asyncio.ensure_future(conn.agent.prompt(sid, "slow"))
    await wait_until(
        lambda: any(m.get("method") == "session/prompt" for m in recorder.log.sent),
        "the prompt is sent",
    )
    # A round trip behind it: the agent has the turn in hand when it goes.
    await asyncio.wait_for(conn.agent.ext_method("_test/echo", 1), TIMEOUT)
    if link.agent is None:
        link.transport.process.kill()  # type: ignore[attr-defined]
    else:
        await link._closer()
    with pytest.raises(ConnectionClosedError):
        await asyncio.wait_for(turn, TIMEOUT)
    with pytest.raises(ConnectionClosedError):
        await conn.agent.new_session("/tmp")
    await conn.close()


async def test_a_client_refuses_an_agent_speaking_an_unsupported_version() -> None:
    a, b = memory_pair()

    class FutureAgent(EngineTestAgent):
        async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
            return s.InitializeResponse(protocol_version=7)

    side = AgentSideConnection(FutureAgent(), a)
    side.start()
    conn = ClientSideConnection(RecordingClient(), b)
    with pytest.raises(VersionMismatchError, match=r"7"):
        await conn.initialize()
    await conn.close()
    await side.close()


async def test_request_cancelled_error_type_maps_from_the_wire() -> None:
    err = RequestError.from_wire({"code": -32800, "message": "gone"})
    assert isinstance(err, RequestCancelled)


async def test_a_slow_reader_slows_the_writer_and_memory_stays_bounded() -> None:
    """Back-pressure: the agent cannot run ahead of a client whose handler is slow."""
    from acpwire.engine.connection import INBOX_HIGH_WATER

    a, b = memory_pair(maxsize=64)
    agent = EngineTestAgent()
    side = AgentSideConnection(agent, a)
    side.start()
    release = asyncio.Event()
    peak = 0

    class SlowClient(RecordingClient):
        async def session_update(self, params: s.SessionNotification) -> None:
            nonlocal peak
            peak = max(peak, len(conn.connection._inbox))
            if not release.is_set():
                await release.wait()
            self.updates.append(params.update)

    handler = SlowClient()
    conn = ClientSideConnection(handler, b)
    await conn.initialize()
    sid = await new_session(conn)
    turn = asyncio.ensure_future(conn.agent.prompt(sid, "stream 10000"))
    # The agent writes while the client handles nothing, until the client stops reading.
    await wait_until(lambda: conn.connection._reader_paused, "the client stops reading")
    assert not turn.done()
    assert len(conn.connection._inbox) <= INBOX_HIGH_WATER + 1
    release.set()
    result = await asyncio.wait_for(turn, TIMEOUT)
    assert result.stop_reason == "end_turn"
    assert len(handler.updates) == 10000
    assert peak <= INBOX_HIGH_WATER + 1
    await conn.close()
    await side.close()
