"""A worker dies; its clients go on through HAProxy on another worker (docs/scale-out.md).

Three ``acp serve --demo`` workers share one PostgreSQL behind a real HAProxy
(conftest.py). A client of acpwire's own (``open_agent(url=...)``, reconnecting)
creates sessions through HAProxy and prompts them; the worker holding them is
killed with SIGKILL; the client reconnects through HAProxy to another worker and
re-attaches its sessions, and a fresh client finds every committed message listed
and replayed there. Over WebSocket and over Streamable HTTP (kept on its worker by
the cookie the worker sets).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from waiting import TIMEOUT, wait_until

from acpwire.client.toolkit import open_agent
from acpwire.protocol.errors import ConnectionLost
from acpwire.transports.remote import Reconnected

from .conftest import ALICE, BOB, Stack

pytestmark = [pytest.mark.scaleout, pytest.mark.slow]


async def _holder(stack: Stack) -> str:
    """The one worker HAProxy has sent this test's client to (there must be exactly one)."""
    used = {name: n for name, n in (await stack.haproxy.sessions_per_worker()).items() if n}
    assert len(used) == 1, f"the client's requests went to several workers: {used}"
    (name,) = used
    return name


@pytest.mark.parametrize("http", [False, True], ids=["websocket", "http"])
async def test_sessions_go_on_through_haproxy_after_their_worker_is_killed(
    stack: Stack, cwd: Path, http: bool
) -> None:
    events: list[Reconnected] = []
    reconnected = asyncio.Event()

    def on_reconnect(event: Reconnected) -> None:
        events.append(event)
        reconnected.set()

    haproxy = stack.haproxy
    async with open_agent(
        url=haproxy.url if http else haproxy.ws_url,
        token=ALICE,
        http=http,
        on_reconnect=on_reconnect,
    ) as client:
        first = await asyncio.wait_for(client.new_session(cwd), TIMEOUT)
        second = await asyncio.wait_for(client.new_session(cwd), TIMEOUT)
        for state, count in ((first, 3), (second, 2)):
            result = await asyncio.wait_for(
                client.prompt(state.session_id, f"stream {count}"), TIMEOUT
            )
            assert result.stop_reason == "end_turn"
        committed = {
            state.session_id: [m.text for m in state.messages] for state in (first, second)
        }
        assert all(len(texts) == 2 for texts in committed.values())
        # Every request of this client, HTTP included, went to one worker (the cookie).
        holder = await _holder(stack)

        # A turn is running when its worker dies: that turn is what is lost.
        turn = asyncio.ensure_future(client.prompt(first.session_id, "slow 30"))
        await wait_until(
            lambda: first.turn_running and len(first.messages) >= 4, "the turn is running"
        )
        await stack.kill(holder)

        with pytest.raises(ConnectionLost) as lost:
            await asyncio.wait_for(turn, TIMEOUT)
        assert lost.value.data == {"sessionReattached": True}
        await asyncio.wait_for(reconnected.wait(), TIMEOUT)
        (event,) = events
        assert sorted(event.reattached) == sorted(committed) and not event.lost

        # Both sessions continue on the worker HAProxy chose instead.
        for state in (first, second):
            result = await asyncio.wait_for(client.prompt(state.session_id, "stream 1"), TIMEOUT)
            assert result.stop_reason == "end_turn"
            assert "chunk 1 of 1" in state.messages[-1].text

    # A fresh client, through HAProxy, lists both sessions and replays every committed
    # message (those before the kill and those after), in order, on a surviving worker.
    async with open_agent(url=haproxy.ws_url, token=ALICE, reconnect=False) as fresh:
        listed = await asyncio.wait_for(fresh.all_sessions(), TIMEOUT)
        assert sorted(info.session_id for info in listed) == sorted(committed)
        for sid, before in committed.items():
            loaded = await asyncio.wait_for(fresh.load_session(sid, cwd), TIMEOUT)
            texts = [m.text for m in loaded.messages]
            assert texts[: len(before)] == before
            assert texts[-2] == "stream 1" and "chunk 1 of 1" in texts[-1]
    assert stack.workers[holder].proc.returncode == -9


async def test_bob_cannot_reach_alices_sessions_on_any_worker_behind_haproxy(
    stack: Stack, cwd: Path
) -> None:
    async with open_agent(url=stack.haproxy.ws_url, token=ALICE, reconnect=False) as alice:
        sid = (await asyncio.wait_for(alice.new_session(cwd), TIMEOUT)).session_id
        await asyncio.wait_for(alice.prompt(sid, "stream 1"), TIMEOUT)
    # Several connections: HAProxy (leastconn) spreads them over the workers.
    for _ in range(len(stack.workers)):
        async with open_agent(url=stack.haproxy.ws_url, token=BOB, reconnect=False) as bob:
            assert await asyncio.wait_for(bob.all_sessions(), TIMEOUT) == []
            with pytest.raises(Exception, match="not found"):
                await asyncio.wait_for(bob.load_session(sid, cwd), TIMEOUT)
    used = await stack.haproxy.sessions_per_worker()
    assert sum(1 for n in used.values() if n) >= 2, used
