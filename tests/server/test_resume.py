"""Resumable streams (docs/remote.md): the network drops mid-turn, twice, the second time
while a permission request is pending; the client resumes the same server connection
(SSE Last-Event-ID, WebSocket re-attach) and loses and repeats no update. Real sockets
through a TCP proxy on 127.0.0.1 that the test cuts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from engine.test_behaviour import RecordingClient
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.client.connection import ClientSideConnection
from acpwire.server import Limits, ServedApp, asgi_app, serve_in_background
from acpwire.server.outbox import Outbox
from acpwire.transports.base import Transport
from acpwire.transports.http import connect_http
from acpwire.transports.websocket import connect_websocket

from ._agents import DripAgents
from ._proxy import Proxy

pytestmark = pytest.mark.slow  # whole turns over a proxy that cuts the network

TOKEN = "resume-token-0123456789abcdef"


class AskedClient(RecordingClient):
    """Answers permission requests only once the test opens the gate (``asked`` says when
    one has come)."""

    def __init__(self) -> None:
        super().__init__()
        self.permission_gate = asyncio.Event()


@pytest.fixture
async def served() -> AsyncIterator[ServedApp]:
    app = asgi_app(DripAgents(), auth=[TOKEN])
    async with serve_in_background(app) as server:
        yield server


@pytest.fixture
async def proxy(served: ServedApp) -> AsyncIterator[Proxy]:
    port = int(served.url.rsplit(":", 1)[1].split("/")[0])
    proxy = await Proxy("127.0.0.1", port).start()
    yield proxy
    await proxy.close()


async def _open(kind: str, served: ServedApp, proxy: Proxy) -> Transport:
    if kind == "websocket":
        return await connect_websocket(proxy.url(served.ws_url), token=TOKEN, resume=True)
    return await connect_http(proxy.url(served.url), token=TOKEN, http2=kind == "http2")


@pytest.mark.parametrize("kind", ["websocket", "http1", "http2"])
async def test_a_dropped_network_mid_turn_loses_and_repeats_nothing(
    kind: str, served: ServedApp, proxy: Proxy
) -> None:
    transport = await _open(kind, served, proxy)
    client = AskedClient()
    conn = ClientSideConnection(client, transport)
    await asyncio.wait_for(conn.initialize(), TIMEOUT)
    sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
    (remote,) = served.app.host.connections.values()
    turn = asyncio.ensure_future(conn.agent.prompt(sid, [s.TextContent(text="drip 200")]))
    await wait_until(lambda: len(client.updates) >= 30, "30 updates arrive")
    proxy.cut()  # mid-stream
    await asyncio.wait_for(client.asked.wait(), TIMEOUT)
    proxy.cut()  # while the permission request waits for its answer
    client.permission_gate.set()
    result = await asyncio.wait_for(turn, TIMEOUT)
    assert result.stop_reason == "end_turn"
    assert client.texts() == [f"d{i}" for i in range(200)]  # all of them, once, in order
    assert getattr(transport, "resumes", 0) >= 2
    # The same server connection all along: resumed, not replaced.
    assert list(served.app.host.connections.values()) == [remote]
    assert proxy.accepted >= 3
    await conn.close()
    await asyncio.wait_for(remote.closed.wait(), TIMEOUT)


@pytest.mark.parametrize("kind", ["websocket", "http1"])
async def test_a_resume_refused_while_the_server_still_holds_the_broken_request_is_tried_again(
    kind: str, served: ServedApp, proxy: Proxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a loaded machine the request the network broke under may not let go within
    # close_timeout: the resume is answered 409, which is not final. Here the first two
    # take-overs are refused as such a server would (the cut here is noticed at once).
    attach, refused = Outbox.attach, []

    async def slow_to_let_go(self: Outbox, *, take_over: bool, timeout: float) -> bool:
        if take_over and len(refused) < 2:
            refused.append(self)
            return False
        return await attach(self, take_over=take_over, timeout=timeout)

    monkeypatch.setattr(Outbox, "attach", slow_to_let_go)
    transport = await _open(kind, served, proxy)
    client = AskedClient()
    conn = ClientSideConnection(client, transport)
    await asyncio.wait_for(conn.initialize(), TIMEOUT)
    sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
    turn = asyncio.ensure_future(conn.agent.prompt(sid, [s.TextContent(text="drip 200")]))
    await wait_until(lambda: len(client.updates) >= 30, "30 updates arrive")
    proxy.cut()
    await asyncio.wait_for(client.asked.wait(), TIMEOUT)
    client.permission_gate.set()
    result = await asyncio.wait_for(turn, TIMEOUT)
    assert result.stop_reason == "end_turn"
    assert client.texts() == [f"d{i}" for i in range(200)]
    assert refused, "no resume met a stream still held: the test tested nothing"
    await conn.close()


async def test_resuming_past_what_the_server_still_keeps_is_refused_with_410() -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    app = asgi_app(DripAgents(), auth=[TOKEN], limits=Limits(resume_messages=4))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    async with serve_in_background(app) as served:
        ws = await connect(served.ws_url, additional_headers={**auth, "Last-Event-ID": "0"})
        assert ws.response is not None
        cid = ws.response.headers["Acp-Connection-Id"]
        await ws.send(
            '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
        )
        await ws.send(
            '{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}'
        )
        frames = [await asyncio.wait_for(ws.recv(), TIMEOUT) for _ in range(2)]
        await ws.send(
            '{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1",'
            '"prompt":[{"type":"text","text":"stream 10"}]}}'
        )
        frames += [await asyncio.wait_for(ws.recv(), TIMEOUT) for _ in range(11)]
        assert '"id":2' in str(frames[-1])
        ws.transport.abort()  # the network drops
        resume = {**auth, "Acp-Connection-Id": cid}
        # The server kept the last 4 messages: from after frame 9 it can resume...
        with pytest.raises(InvalidStatus) as refused:
            await connect(served.ws_url, additional_headers={**resume, "Last-Event-ID": "2"})
        assert refused.value.response.status_code == 410
        again = await connect(served.ws_url, additional_headers={**resume, "Last-Event-ID": "9"})
        assert again.response is not None
        assert again.response.headers["Last-Event-ID"] == "3"  # it got our three frames
        replayed = [await asyncio.wait_for(again.recv(), TIMEOUT) for _ in range(4)]
        assert replayed == frames[9:]
        await again.close()


def test_the_event_log_keeps_the_last_messages_within_its_bounds() -> None:
    from acpwire.server.outbox import Outbox, ReplayBudget

    budget = ReplayBudget(limit=25)
    box = Outbox(Limits(resume_messages=3), budget)
    for n in range(5):
        assert box.take(b"m%d" % n) == (n + 1, b"m%d" % n)
    assert box.replay_after(5) == []
    assert box.replay_after(2) == [(3, b"m2"), (4, b"m3"), (5, b"m4")]
    assert box.replay_after(1) is None  # m1 has been dropped
    assert box.replay_after(6) is None  # never written
    other = Outbox(Limits(), budget)  # the connection's budget is shared:
    other.take(b"x" * 20)  # over it, so the stream that wrote last drops its oldest
    assert other.replay_after(0) is None and budget.held == 6
    box.take(b"m5")
    assert box.replay_after(3) == [(4, b"m3"), (5, b"m4"), (6, b"m5")] and budget.held == 6
