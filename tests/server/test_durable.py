"""Resume by cursor (``asgi_app(resumable=True)``, ``acp serve --resumable``): the durable
transport draft (RFD durable-resumable-http-transport; docs/remote.md, "Resume by cursor").

Real sockets on 127.0.0.1: raw clients that read every byte the endpoint writes (SSE
events, WebSocket frames), acpwire's own clients through a TCP proxy the test cuts or
freezes, and another principal trying to use what it stole.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from engine.test_behaviour import RecordingClient
from waiting import TIMEOUT, wait_until
from websockets.asyncio.client import ClientConnection, connect

from acpwire import schema as s
from acpwire.client.connection import ClientSideConnection
from acpwire.conformance import CheckOptions, EndpointTarget, run_checks
from acpwire.protocol.cursors import (
    CONNECTION_GONE,
    CURSOR,
    OUTSIDE_RETENTION,
    RESUME,
    RESUME_FAILED,
    RESUMED,
    TURN_STATE,
    TURN_STATES,
    UNKNOWN_CURSOR,
    cursor_of,
)
from acpwire.server import Limits, ServedApp, asgi_app, serve_in_background
from acpwire.store.streams import StreamLog
from acpwire.testing import SchemaValidator
from acpwire.transports.base import Transport
from acpwire.transports.http import HttpTransport, connect_http
from acpwire.transports.websocket import WebSocketTransport, connect_websocket

from ._agents import DripAgents
from ._proxy import Proxy

ALICE = "durable-alice-token-0123456789abcdef"
BOB = "durable-bob-token-0123456789abcdef"
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
NEW = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}


def auth(token: str = ALICE) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def prompt(rid: int, sid: str, text: str) -> dict[str, Any]:
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    return {"jsonrpc": "2.0", "id": rid, "method": "session/prompt", "params": params}


def frame(message: dict[str, Any]) -> str:
    return json.dumps(message)


@contextlib.asynccontextmanager
async def serving(
    limits: Limits | None = None, keepalive: float = 15.0
) -> AsyncIterator[ServedApp]:
    app = asgi_app(
        DripAgents(), auth=[ALICE, BOB], limits=limits, keepalive=keepalive, resumable=True
    )
    async with serve_in_background(app) as served:
        yield served


class Sse:
    """One raw SSE response: its events as ``(id, data)`` and the comments it carried."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.comments = 0
        self._chunks = response.aiter_bytes()
        self._buffer = b""

    async def next(self) -> tuple[str | None, bytes]:
        while b"\n\n" not in self._buffer:
            self._buffer += await asyncio.wait_for(anext(self._chunks), TIMEOUT)
        block, self._buffer = self._buffer.split(b"\n\n", 1)
        event_id, data = None, []
        for line in block.split(b"\n"):
            if line.startswith(b":"):
                self.comments += 1
            elif line.startswith(b"id: "):
                event_id = line[4:].decode()
            elif line.startswith(b"data: "):
                data.append(line[6:])
        if not data:
            return await self.next()
        return event_id, b"\n".join(data)

    async def until(self, done: Any) -> list[tuple[str | None, dict[str, Any]]]:
        """Events up to and including the first whose message ``done(message)`` accepts."""
        got: list[tuple[str | None, dict[str, Any]]] = []
        while True:
            event_id, data = await self.next()
            message = json.loads(data)
            got.append((event_id, message))
            if done(message):
                return got


class Http:
    """A raw Streamable HTTP client of one principal."""

    def __init__(self, served: ServedApp, token: str = ALICE) -> None:
        self.url = served.url
        self.client = httpx.AsyncClient(headers=auth(token), timeout=TIMEOUT)
        self.cid = ""

    async def initialize(self) -> dict[str, Any]:
        answer = await self.client.post(self.url, json=INIT)
        assert answer.status_code == 200
        self.cid = answer.headers["acp-connection-id"]
        result: dict[str, Any] = answer.json()
        return result

    async def post(self, message: dict[str, Any], session: str | None = None) -> int:
        headers = {"acp-connection-id": self.cid}
        if session is not None:
            headers["acp-session-id"] = session
        return (await self.client.post(self.url, json=message, headers=headers)).status_code

    @contextlib.asynccontextmanager
    async def stream(
        self, last: str | None = None, cid: str | None = None, **extra: str
    ) -> AsyncIterator[Sse]:
        headers = {"accept": "text/event-stream", "acp-connection-id": cid or self.cid, **extra}
        if last is not None:
            headers["last-event-id"] = last
        async with self.client.stream("GET", self.url, headers=headers) as response:
            yield Sse(response)

    async def aclose(self) -> None:
        await self.client.aclose()


def allow(request_id: object) -> dict[str, Any]:
    outcome = {"outcome": "selected", "optionId": "yes"}
    return {"jsonrpc": "2.0", "id": request_id, "result": {"outcome": outcome}}


def answer_to(rid: int) -> Any:
    return lambda m: m.get("id") == rid and "method" not in m


async def ws_until(ws: ClientConnection, done: Any) -> list[dict[str, Any]]:
    got = []
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
        got.append(message)
        if done(message):
            return got


# -- cursors ------------------------------------------------------------------------------


async def test_every_message_carries_a_cursor_the_same_in_its_sse_id_and_validates(
    schema_validator: SchemaValidator,
) -> None:
    """RFD durable transport §1: the SSE ``id:`` and ``_meta["acp/cursor"]`` are one cursor,
    monotonic within the stream, on answers, notifications, agent requests and errors."""
    async with serving() as served:
        http = Http(served)
        init = await http.initialize()
        resumable = init["result"]["agentCapabilities"]["transport"]["resumable"]
        assert resumable == {
            "retentionMessages": 256,
            "retentionSeconds": 60,
            "keepaliveSeconds": 15,
        }
        schema_validator.validate(init)
        async with http.stream() as sse:
            assert await http.post(NEW) == 202
            (new,) = await sse.until(answer_to(1))
            sid = new[1]["result"]["sessionId"]
            assert await http.post(prompt(2, sid, "stream 5"), sid) == 202
            events = await sse.until(answer_to(2))
            assert await http.post(prompt(3, "nope", "x"), "nope") == 202
            events += await sse.until(answer_to(3))
        await http.aclose()
    events = [new, *events]
    assert [int(event_id or 0) for event_id, _ in events] == list(range(1, len(events) + 1))
    for event_id, message in events:
        assert cursor_of(json.dumps(message).encode()) == event_id
        schema_validator.validate(message)
    assert events[-1][1]["error"]["data"]["_meta"][CURSOR] == events[-1][0]


async def test_over_a_websocket_every_frame_carries_its_cursor() -> None:
    async with serving() as served:
        async with connect(served.ws_url, additional_headers=auth()) as ws:
            assert ws.response is not None
            assert ws.response.headers["Acp-Keepalive"] == "15"
            await ws.send(frame(INIT))
            init = (await ws_until(ws, answer_to(0)))[-1]
            assert "resumable" in init["result"]["agentCapabilities"]["transport"]
            await ws.send(frame(NEW))
            new = await ws_until(ws, answer_to(1))
            sid = new[-1]["result"]["sessionId"]
            await ws.send(frame(prompt(2, sid, "stream 5")))
            turn = await ws_until(ws, answer_to(2))
    cursors = [cursor_of(json.dumps(m).encode()) for m in [init, *new, *turn]]
    assert cursors == [str(n) for n in range(1, len(cursors) + 1)]


# -- resume -------------------------------------------------------------------------------


async def test_a_replay_carries_the_original_cursors_so_two_resumes_converge() -> None:
    async with serving() as served:
        http = Http(served)
        await http.initialize()
        async with http.stream() as sse:
            assert await http.post(NEW) == 202
            sid = (await sse.until(answer_to(1)))[0][1]["result"]["sessionId"]
            assert await http.post(prompt(2, sid, "stream 10"), sid) == 202
            first = await sse.until(answer_to(2))
        # The client applied the first four of the turn's events, then the stream broke.
        mark = first[3][0]
        assert mark is not None
        resumes = []
        for _ in range(2):
            async with http.stream(last=mark) as sse:
                resumes.append(await sse.until(lambda m: m.get("method") == RESUMED))
        await http.aclose()
    assert resumes[0] == resumes[1]
    *replayed, (ack_id, ack) = resumes[0]
    assert replayed == first[4:]  # the same ids, the same bytes
    assert ack_id is None  # the acknowledgment is no position in the stream
    assert ack["params"]["_meta"][TURN_STATES] == {sid: {"state": "idle", "stopReason": "end_turn"}}
    assert ack["params"]["_meta"][TURN_STATE] == {"state": "idle", "stopReason": "end_turn"}


async def test_a_resume_the_server_cannot_serve_is_refused_with_a_reason_never_a_live_stream() -> (
    None
):
    """§2: 409 with a reason (cursor unknown, outside retention, connection gone); the
    WebSocket gets ``stream/resume_failed`` and is closed."""
    async with serving(Limits(resume_messages=4)) as served:
        http = Http(served)
        await http.initialize()
        async with http.stream() as sse:
            assert await http.post(NEW) == 202
            sid = (await sse.until(answer_to(1)))[0][1]["result"]["sessionId"]
            assert await http.post(prompt(2, sid, "stream 10"), sid) == 202
            await sse.until(answer_to(2))
        refusals = {}
        for name, last, cid in (
            ("ahead", "999", None),
            ("not ours", "x7", None),
            ("too old", "1", None),
            ("no connection", "3", "no-such-connection"),
        ):
            async with http.stream(last=last, cid=cid) as sse:
                await sse.response.aread()
                refusals[name] = (sse.response.status_code, sse.response.json()["reason"])
        await http.aclose()
    assert refusals == {
        "ahead": (409, UNKNOWN_CURSOR),
        "not ours": (409, UNKNOWN_CURSOR),
        "too old": (409, OUTSIDE_RETENTION),
        "no connection": (409, CONNECTION_GONE),
    }


async def ws_resume(
    served: ServedApp, cid: str, cursor: str, token: str = ALICE
) -> tuple[ClientConnection, list[dict[str, Any]]]:
    """A socket resuming ``cid`` by cursor, and what it got up to the acknowledgment."""
    ws = await connect(served.ws_url, additional_headers={**auth(token), "Acp-Connection-Id": cid})
    params = {"connectionId": cid, "streams": [{"cursor": cursor}]}
    await ws.send(frame({"jsonrpc": "2.0", "method": RESUME, "params": params}))
    got = await ws_until(ws, lambda m: m.get("method") in (RESUMED, RESUME_FAILED))
    return ws, got


async def test_a_websocket_resumes_by_cursor_with_its_first_frame_and_learns_where_the_turn_is() -> (
    None
):
    async with serving() as served:
        ws = await connect(served.ws_url, additional_headers=auth())
        assert ws.response is not None
        cid = ws.response.headers["Acp-Connection-Id"]
        await ws.send(frame(INIT))
        await ws.send(frame(NEW))
        sid = (await ws_until(ws, answer_to(1)))[-1]["result"]["sessionId"]
        await ws.send(frame(prompt(2, sid, "slow")))
        # The network drops: the connection waits for its client, the turn goes on.
        ws.transport.abort()
        (remote,) = served.app.host.connections.values()
        await wait_until(lambda: remote.streams.main.attached is False, "the socket let go")
        again, got = await ws_resume(served, cid, "2")
        *replayed, ack = got
        assert ack["method"] == RESUMED
        assert ack["params"]["received"] == "3"  # initialize, session/new, the prompt
        assert ack["params"]["_meta"][TURN_STATES] == {
            sid: {"state": "running", "promptRequestId": 2}
        }
        # Cancel the slow turn from the resumed socket: its answer comes live.
        cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}
        await again.send(frame(cancel))
        live = await ws_until(again, answer_to(2))
        assert live[-1]["result"]["stopReason"] == "cancelled"
        assert all(cursor_of(json.dumps(m).encode()) for m in replayed + live)
        await again.close()


async def test_a_websocket_resume_that_cannot_be_served_gets_resume_failed_and_a_close() -> None:
    async with serving(Limits(resume_messages=2)) as served:
        ws = await connect(served.ws_url, additional_headers=auth())
        assert ws.response is not None
        cid = ws.response.headers["Acp-Connection-Id"]
        await ws.send(frame(INIT))
        await ws.send(frame(NEW))
        sid = (await ws_until(ws, answer_to(1)))[-1]["result"]["sessionId"]
        await ws.send(frame(prompt(2, sid, "stream 6")))
        await ws_until(ws, answer_to(2))
        ws.transport.abort()
        reasons = {}
        for name, cursor, target in (
            ("too old", "1", cid),
            ("ahead", "99", cid),
            ("no connection", "1", "nope"),
        ):
            socket, got = await ws_resume(served, target, cursor)
            assert got[-1]["method"] == RESUME_FAILED
            reasons[name] = got[-1]["params"]["reason"]
            await asyncio.wait_for(socket.wait_closed(), TIMEOUT)
    assert reasons == {
        "too old": OUTSIDE_RETENTION,
        "ahead": UNKNOWN_CURSOR,
        "no connection": CONNECTION_GONE,
    }


async def test_turn_state_after_resume_says_running_requires_action_or_idle() -> None:
    async with serving() as served:
        http = Http(served)
        await http.initialize()
        async with http.stream() as sse:
            assert await http.post(NEW) == 202
            sid = (await sse.until(answer_to(1)))[0][1]["result"]["sessionId"]
            assert await http.post(prompt(2, sid, "ask"), sid) == 202
            (asked,) = await sse.until(lambda m: m.get("method") == "session/request_permission")
        states = []
        async with http.stream(last=asked[0]) as sse:
            states.append((await sse.until(lambda m: m.get("method") == RESUMED))[-1][1])
        assert await http.post(allow(asked[1]["id"]), sid) == 202
        async with http.stream(last=asked[0]) as sse:
            rest = await sse.until(answer_to(2))
        async with http.stream(last=rest[-1][0]) as sse:
            states.append((await sse.until(lambda m: m.get("method") == RESUMED))[-1][1])
        await http.aclose()
    meta = [ack["params"]["_meta"][TURN_STATE] for ack in states]
    assert meta == [
        {"state": "requires_action", "promptRequestId": 2},
        {"state": "idle", "stopReason": "end_turn"},
    ]


# -- acpwire's clients, through a network that breaks --------------------------------------


@pytest.fixture
async def served() -> AsyncIterator[ServedApp]:
    async with serving() as server:
        yield server


@pytest.fixture
async def proxy(served: ServedApp) -> AsyncIterator[Proxy]:
    port = int(served.url.rsplit(":", 1)[1].split("/")[0])
    proxy = await Proxy("127.0.0.1", port).start()
    yield proxy
    await proxy.close()


async def _open(kind: str, served: ServedApp, proxy: Proxy) -> Transport:
    if kind == "websocket":
        return await connect_websocket(proxy.url(served.ws_url), token=ALICE, resume=True)
    return await connect_http(proxy.url(served.url), token=ALICE, http2=kind == "http2")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["websocket", "http1", "http2"])
async def test_acpwire_clients_resume_by_cursor_losing_and_repeating_nothing(
    kind: str, served: ServedApp, proxy: Proxy
) -> None:
    transport = await _open(kind, served, proxy)
    client = RecordingClient()
    client.permission_gate = asyncio.Event()
    conn = ClientSideConnection(client, transport)
    await asyncio.wait_for(conn.initialize(), TIMEOUT)
    assert isinstance(transport, (HttpTransport, WebSocketTransport))
    assert transport.durable is not None
    sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
    (remote,) = served.app.host.connections.values()
    turn = asyncio.ensure_future(conn.agent.prompt(sid, [s.TextContent(text="drip 200")]))
    await wait_until(lambda: len(client.updates) >= 30, "30 updates arrive")
    proxy.cut()
    await asyncio.wait_for(client.asked.wait(), TIMEOUT)
    proxy.cut()
    client.permission_gate.set()
    result = await asyncio.wait_for(turn, TIMEOUT)
    assert result.stop_reason == "end_turn"
    assert client.texts() == [f"d{i}" for i in range(200)]
    assert transport.resumes >= 2
    assert list(served.app.host.connections.values()) == [remote]
    # The last resume's acknowledgment said where the turn was (kept, not passed up).
    assert transport.turn_states
    await conn.close()
    await asyncio.wait_for(remote.closed.wait(), TIMEOUT)


class _Gateway(Proxy):
    """The proxy, playing a load balancer whose worker just died: the next
    :attr:`bad_gateways` stream resumes (``GET`` with ``Last-Event-ID``) get 502."""

    bad_gateways = 0
    answered = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.bad_gateways > 0:
            head = await reader.readuntil(b"\r\n\r\n")
            if head.startswith(b"GET ") and b"\nlast-event-id:" in head.lower():
                self.bad_gateways -= 1
                self.answered += 1
                writer.write(b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()
                writer.close()
                return
            # Not a resume: through, as it came (the head back in front of what followed).
            reader.feed_data(head)
            buffered = reader._buffer
            buffered[:] = buffered[-len(head) :] + buffered[: -len(head)]
        await super()._serve(reader, writer)


@pytest.mark.slow
async def test_a_resume_answered_502_by_a_gateway_is_tried_again_not_taken_for_a_refusal(
    served: ServedApp,
) -> None:
    """Behind a load balancer a resume can reach a worker that died before the balancer
    noticed: its 502 (503, 504) is tried again within the resume window, as a network
    error is, never taken for the server refusing the resume."""
    port = int(served.url.rsplit(":", 1)[1].split("/")[0])
    gateway = await _Gateway("127.0.0.1", port).start()
    try:
        transport = await connect_http(gateway.url(served.url), token=ALICE, http2=False)
        client = RecordingClient()
        conn = ClientSideConnection(client, transport)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
        (remote,) = served.app.host.connections.values()
        turn = asyncio.ensure_future(conn.agent.prompt(sid, [s.TextContent(text="drip 100")]))
        await wait_until(lambda: len(client.updates) >= 20, "20 updates arrive")
        gateway.bad_gateways = 2
        gateway.cut()
        result = await asyncio.wait_for(turn, TIMEOUT)
        assert result.stop_reason == "end_turn"
        assert client.texts() == [f"d{i}" for i in range(100)]
        assert gateway.answered == 2
        assert transport.resumes >= 1
        assert list(served.app.host.connections.values()) == [remote]
        await conn.close()
    finally:
        await gateway.close()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["websocket", "http1"])
async def test_a_half_open_connection_is_noticed_within_five_keepalives_and_resumed(
    kind: str,
) -> None:
    """§3 liveness: the proxy stops forwarding without closing anything (a half-open
    path); the client hears no keepalive for five intervals and resumes."""
    async with serving(keepalive=0.3) as served:
        port = int(served.url.rsplit(":", 1)[1].split("/")[0])
        proxy = await Proxy("127.0.0.1", port).start()
        try:
            transport = await _open(kind, served, proxy)
            client = RecordingClient()
            conn = ClientSideConnection(client, transport)
            await asyncio.wait_for(conn.initialize(), TIMEOUT)
            sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
            # A first turn opens the session's own stream (HTTP): both streams are frozen.
            await asyncio.wait_for(
                conn.agent.prompt(sid, [s.TextContent(text="stream 1")]), TIMEOUT
            )
            client.updates.clear()
            proxy.freeze()
            turn = asyncio.ensure_future(conn.agent.prompt(sid, [s.TextContent(text="stream 20")]))
            await wait_until(lambda: proxy.frozen_seen >= 1, "the frozen path is used")
            result = await asyncio.wait_for(turn, TIMEOUT)
            assert result.stop_reason == "end_turn"
            assert client.texts() == [f"chunk {i}" for i in range(20)]
            assert getattr(transport, "resumes", 0) >= 1
            await conn.close()
        finally:
            await proxy.close()


async def test_an_http_connection_outlives_its_streams_for_the_grace_period_only() -> None:
    """§3: a stream that drops never cancels work; a connection no stream holds ends after
    ``resume_timeout``; one whose client came back goes on."""
    async with serving(Limits(resume_timeout=2.0)) as served:
        http = Http(served)
        await http.initialize()
        async with http.stream() as sse:
            assert await http.post(NEW) == 202
            sid = (await sse.until(answer_to(1)))[0][1]["result"]["sessionId"]
            assert await http.post(prompt(2, sid, "drip 20"), sid) == 202
            asked = (await sse.until(lambda m: m.get("method") == "session/request_permission"))[-1]
        # No stream now: the turn waits for its permission, the connection for its client.
        (remote,) = served.app.host.connections.values()
        assert await http.post(allow(asked[1]["id"]), sid) == 202
        async with http.stream(last=asked[0]) as sse:
            rest = await sse.until(answer_to(2))
        texts = [
            m["params"]["update"]["content"]["text"]
            for _, m in rest
            if m.get("method") == "session/update"
        ]
        assert texts == [f"d{i}" for i in range(10, 20)]
        await asyncio.wait_for(remote.closed.wait(), TIMEOUT)  # no stream: the grace ran out
        assert remote.end_reason == "client gone"
        await http.aclose()


# -- security -----------------------------------------------------------------------------


async def test_another_principal_cannot_resume_or_replay_a_stolen_connection_and_cursor() -> None:
    """docs/security.md: a connection id and a cursor are no credential. Bob, holding
    Alice's connection id and a cursor, is told the connection is gone (as for one that
    never existed), over HTTP and WebSocket, and reads nothing of hers."""
    async with serving() as served:
        alice = Http(served)
        await alice.initialize()
        async with alice.stream() as sse:
            assert await alice.post(NEW) == 202
            sid = (await sse.until(answer_to(1)))[0][1]["result"]["sessionId"]
            assert await alice.post(prompt(2, sid, "echo alice-secret"), sid) == 202
            await sse.until(answer_to(2))
        bob = Http(served, BOB)
        await bob.initialize()
        answers = []
        for cid, extra in (
            (alice.cid, {}),
            (alice.cid, {"acp-session-id": sid}),
            ("never-was", {}),
        ):
            async with bob.stream(last="3", cid=cid, **extra) as sse:
                await sse.response.aread()
                answers.append((sse.response.status_code, sse.response.content))
        assert answers == [answers[2]] * 3  # hers, her session's, and none: all the same
        assert answers[2][0] == 409
        assert json.loads(answers[2][1])["reason"] == CONNECTION_GONE
        socket, got = await ws_resume(served, alice.cid, "3", token=BOB)
        assert got[-1]["params"]["reason"] == CONNECTION_GONE
        await socket.close()
        # Alice herself still resumes: Bob's attempts took nothing over.
        async with alice.stream(last="0") as sse:
            mine = await sse.until(lambda m: m.get("method") == RESUMED)
        assert "alice-secret" in json.dumps(mine)
        assert "alice-secret" not in json.dumps(got) + repr(answers)
        await alice.aclose()
        await bob.aclose()


async def test_a_v2_connection_gets_a_state_update_per_session_before_the_acknowledgment() -> None:
    """§4: on v2 the turn state is a ``state_update`` (the agent's own last one), written
    after the replay and before anything live, without a cursor."""
    from acpwire.demo import build_app

    app = asgi_app(build_app(None), auth=[ALICE], resumable=True)
    async with serve_in_background(app) as served:
        ws = await connect(served.ws_url, additional_headers=auth())
        assert ws.response is not None
        cid = ws.response.headers["Acp-Connection-Id"]
        info = {"name": "test", "version": "1"}
        await ws.send(frame({**INIT, "params": {"protocolVersion": 2, "info": info}}))
        init = (await ws_until(ws, answer_to(0)))[-1]
        assert "resumable" in init["result"]["capabilities"]["transport"]
        await ws.send(
            frame({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/"}})
        )
        sid = (await ws_until(ws, answer_to(1)))[-1]["result"]["sessionId"]
        await ws.send(frame(prompt(2, sid, "slow 30")))
        running = await ws_until(
            ws, lambda m: m.get("params", {}).get("update", {}).get("state") == "running"
        )
        ws.transport.abort()
        (remote,) = served.app.host.connections.values()
        await wait_until(lambda: remote.streams.main.attached is False, "the socket let go")
        again, got = await ws_resume(served, cid, cursor_of(json.dumps(running[-1]).encode()) or "")
        *before, ack = got
        states = [m for m in before if m.get("method") == "session/update"]
        snapshot = states[-1]
        assert snapshot["params"] == {
            "sessionId": sid,
            "update": {"sessionUpdate": "state_update", "state": "running"},
        }
        assert cursor_of(json.dumps(snapshot).encode()) is None
        assert ack["params"]["_meta"][TURN_STATES][sid]["state"] == "running"
        cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}
        await again.send(frame(cancel))
        await ws_until(
            again, lambda m: m.get("params", {}).get("update", {}).get("state") == "idle"
        )
        await again.close()


async def test_acp_check_finds_the_cursor_rules_kept_by_the_resumable_endpoint() -> None:
    """``acp check --url``'s cursor checks (RFD-DUR-001..003; docs/check.md) pass on
    ``asgi_app(resumable=True)``, and are not applicable without it. The checks' own
    defects are tested on the stand-in (tests/conformance/test_endpoint_corpus.py)."""
    keys = frozenset({"cursor-every-message", "cursor-replay", "cursor-unknown"})
    for resumable in (True, False):
        app = asgi_app(DripAgents(), auth=[ALICE], resumable=resumable)
        async with serve_in_background(app) as served:
            target = EndpointTarget(served.url, token=ALICE)
            report = await run_checks(CheckOptions(endpoint=target, only=keys))
        statuses = {r.check.key: (r.status, r.detail) for r in report.results}
        want = "pass" if resumable else "n/a"
        assert {k: s for k, (s, _) in statuses.items()} == dict.fromkeys(keys, want), statuses


class _FailingStreamLog:
    """A shared store whose every write of a stream fails (a database gone away)."""

    def __init__(self) -> None:
        self.tries = 0

    async def worker_started(self, worker: str) -> None:
        return None

    async def worker_alive(self, worker: str) -> bool:
        return True

    async def keep_stream(self, connection_id: str, stream: str, **fields: Any) -> None:
        self.tries += 1
        raise OSError("the database went away")

    async def stored_stream(self, connection_id: str, stream: str) -> None:
        return None

    async def stream_after(self, connection_id: str, stream: str, after: int) -> list[Any]:
        return []

    async def forget_connection(self, connection_id: str) -> None:
        return None

    async def sweep_streams(self, older_than: float) -> None:
        return None


class _SharedDripAgents(DripAgents):
    def __init__(self, store: _FailingStreamLog) -> None:
        super().__init__()
        self.store = store


@pytest.mark.parametrize("kind", ["websocket", "http1"])
async def test_a_shared_store_that_fails_stops_the_keeping_never_the_stream(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Retention across workers (docs/remote.md): a store that cannot keep a stream's
    messages costs that connection its resume through another worker, logged, and
    nothing else: every message still reaches the client, in order."""
    store = _FailingStreamLog()
    assert isinstance(store, StreamLog)
    app = asgi_app(_SharedDripAgents(store), auth=[ALICE], resumable=True)
    assert app.host.retention is not None
    async with serve_in_background(app) as served:
        if kind == "websocket":
            transport: Transport = await connect_websocket(served.ws_url, token=ALICE)
        else:
            transport = await connect_http(served.url, token=ALICE, http2=False)
        client = RecordingClient()
        conn = ClientSideConnection(client, transport)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
        result = await asyncio.wait_for(
            conn.agent.prompt(sid, [s.TextContent(text="drip 50")]), TIMEOUT
        )
        assert result.stop_reason == "end_turn"
        assert client.texts() == [f"d{i}" for i in range(50)]
        await conn.close()
    assert store.tries >= 1
    assert "cannot keep its streams in the store (the database went away)" in caplog.text
