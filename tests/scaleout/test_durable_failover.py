"""Resume by cursor through a network that breaks and a worker that dies (issue 21's fault
test; docs/remote.md, "Resume by cursor", and docs/scale-out.md).

Two ``acp serve --demo --resumable`` workers share one PostgreSQL behind a real HAProxy
(conftest.py); the client reaches HAProxy through a TCP proxy the test cuts and freezes
(tests/server/_proxy.py). A turn streams 10,000 chunks; the test cuts the client's TCP
connections 20 times at random points; then, the client's path frozen (a half-open
network: nothing passes, nothing is closed), the turn ends on the server and the worker
is killed with SIGKILL (the rest of the turn, thousands of chunks and its end, is then
nowhere but in PostgreSQL). The client notices the silence (five keepalives), resumes through
HAProxy on the other worker, which replays from PostgreSQL what the dead one wrote and
the client never got, with the original cursors; then the client re-attaches its session
on a new connection. It ends with every chunk exactly once, in order, and the turn's end.
"""

from __future__ import annotations

import asyncio
import random
import sys
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import pytest
from engine.test_behaviour import RecordingClient
from server._proxy import Proxy
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.client.connection import ClientSideConnection
from acpwire.transports.remote import ReconnectingTransport, connect_remote

from .conftest import ALICE, Stack

pytestmark = [pytest.mark.scaleout, pytest.mark.slow]

CHUNKS = 10_000
CUTS = 20


async def _holder(stack: Stack) -> str:
    used = {name: n for name, n in (await stack.haproxy.sessions_per_worker()).items() if n}
    assert len(used) == 1, f"the client's requests went to several workers: {used}"
    (name,) = used
    return name


async def _turn_kept(dsn: str, connection_id: str) -> bool:
    """Whether the prompt's answer is in PostgreSQL: the turn ended on the server."""
    db = await asyncpg.connect(dsn)
    try:
        found = await db.fetchval(
            "SELECT count(*) FROM acpwire.stream_messages "
            "WHERE connection_id = $1 AND body LIKE '%stopReason%'",
            connection_id,
        )
    finally:
        await db.close()
    return bool(found)


@pytest.mark.parametrize("http", [False, True], ids=["websocket", "http"])
async def test_ten_thousand_chunks_through_twenty_cuts_and_a_killed_worker_arrive_once(
    resumable_stack: Stack, cwd: Path, http: bool
) -> None:
    stack = resumable_stack
    seed = random.randrange(1 << 30)
    print(f"cut points from random seed {seed}", file=sys.stderr)
    rng = random.Random(seed)
    haproxy = stack.haproxy
    port = int(haproxy.url.rsplit(":", 1)[1].split("/")[0])
    proxy = await Proxy("127.0.0.1", port).start()
    try:
        transport = await connect_remote(
            proxy.url(haproxy.url if http else haproxy.ws_url),
            token=ALICE,
            kind="http" if http else "websocket",
            http2=False,
        )
        assert isinstance(transport, ReconnectingTransport)
        client = RecordingClient()
        conn = ClientSideConnection(client, transport)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        sid = (await asyncio.wait_for(conn.agent.new_session(str(cwd)), TIMEOUT)).session_id
        first_id = transport.connection_id
        assert first_id is not None
        turn = asyncio.ensure_future(
            conn.agent.prompt(sid, [s.TextContent(text=f"stream {CHUNKS}")])
        )

        def chunks() -> int:
            return len(client.updates)

        for point in sorted(rng.sample(range(100, 5_000), CUTS)):
            await wait_until(lambda p=point: chunks() >= p, f"{point} chunks arrive")
            proxy.cut()
        # Frozen thousands of chunks before the end: more than the client's socket buffer
        # holds, so the rest of the turn goes nowhere but into PostgreSQL.
        frozen_at = rng.randrange(5_000, 7_000)
        await wait_until(lambda: chunks() >= frozen_at, f"{frozen_at} chunks arrive")
        proxy.freeze()  # from here the client hears nothing, and nothing tells it so
        for _ in range(int(TIMEOUT * 10)):
            if await _turn_kept(stack.dsn, first_id):
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("the turn never ended on the server")
        holder = await _holder(stack)
        await stack.kill(holder)

        result = await asyncio.wait_for(turn, 4 * TIMEOUT)
        assert result.stop_reason == "end_turn"
        texts = client.texts()
        expected = [f"chunk {i} of {CHUNKS}\n" for i in range(1, CHUNKS + 1)]
        if texts != expected:
            seen = set(texts)
            missing = [t for t in expected if t not in seen]
            repeated = len(texts) - len(seen)
            raise AssertionError(
                f"{len(texts)} chunks, {len(missing)} missing (first {missing[:3]}), "
                f"{repeated} repeated (seed {seed})"
            )
        # The session is re-attached on a new connection, on the worker that is left.
        await wait_until(lambda: transport.reconnects == 1, "the client reconnects")
        assert transport.connection_id != first_id
        again = await asyncio.wait_for(
            conn.agent.prompt(sid, [s.TextContent(text="stream 2")]), TIMEOUT
        )
        assert again.stop_reason == "end_turn"
        await conn.close()
    finally:
        await proxy.close()
