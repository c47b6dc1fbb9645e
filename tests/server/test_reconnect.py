"""Reconnect with session re-attach (docs/remote.md, "Reconnect"): the server process is
killed and started again in the middle of a session; the client goes on with the same
session id and nothing the server had committed is lost."""

from __future__ import annotations

import asyncio
import signal
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.client.toolkit import open_agent
from acpwire.protocol.errors import ConnectionLost
from acpwire.transports.remote import Reconnected

from ._serve import Serve, acp_serve

pytestmark = pytest.mark.slow  # acp serve runs as a process, killed and restarted

TOKEN = "reconnect-token-0123456789abcdef"


def _port(serve: Serve) -> str:
    return serve.url.rsplit(":", 1)[1].split("/")[0]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    return folder


def _serving(data_dir: Path, port: str = "0") -> AbstractAsyncContextManager[Serve]:
    env = {"ACPWIRE_DATA_DIR": str(data_dir), "ACP_SERVE_TOKEN": TOKEN}
    return acp_serve("--demo", env=env, port=port)


async def _killed(serve: Serve) -> None:
    serve.proc.send_signal(signal.SIGKILL)
    await asyncio.wait_for(serve.proc.wait(), TIMEOUT)


@pytest.mark.parametrize("http", [False, True], ids=["websocket", "http"])
async def test_a_session_goes_on_after_the_server_is_killed_and_started_again(
    data_dir: Path, tmp_path: Path, http: bool
) -> None:
    events: list[Reconnected] = []
    reconnected = asyncio.Event()

    def on_reconnect(event: Reconnected) -> None:
        events.append(event)
        reconnected.set()

    async with _serving(data_dir) as first:
        port = _port(first)
        async with open_agent(
            url=first.url if http else first.ws_url,
            token=TOKEN,
            http=http,
            on_reconnect=on_reconnect,
        ) as client:
            state = await asyncio.wait_for(client.new_session(tmp_path), TIMEOUT)
            sid = state.session_id
            result = await asyncio.wait_for(client.prompt(sid, "stream 3"), TIMEOUT)
            assert result.stop_reason == "end_turn"
            turn = asyncio.ensure_future(client.prompt(sid, "slow 30"))
            await wait_until(
                lambda: state.turn_running and len(state.messages) >= 4, "the turn is running"
            )
            await _killed(first)
            async with _serving(data_dir, port) as second:
                # The turn in flight fails with an error of its own kind, after the re-attach.
                with pytest.raises(ConnectionLost) as lost:
                    await asyncio.wait_for(turn, TIMEOUT)
                assert lost.value.message == "connection lost; session re-attached"
                assert lost.value.data == {"sessionReattached": True}
                await asyncio.wait_for(reconnected.wait(), TIMEOUT)
                (event,) = events
                assert event.reattached == (sid,) and not event.lost
                assert client.reconnections == events
                # Same session id, same agent history: it goes on.
                result = await asyncio.wait_for(client.prompt(sid, "stream 2"), TIMEOUT)
                assert result.stop_reason == "end_turn"
                assert "chunk 2 of 2" in state.messages[-1].text
                # A fresh client loading the session sees every committed turn.
                async with open_agent(url=second.ws_url, token=TOKEN, reconnect=False) as other:
                    loaded = await asyncio.wait_for(other.load_session(sid, tmp_path), TIMEOUT)
                    texts = [m.text for m in loaded.messages]
                    assert "stream 3" in texts[0] and "chunk 3 of 3" in texts[1]
                    assert texts[-2] == "stream 2" and "chunk 2 of 2" in texts[-1]


async def test_a_refused_token_is_not_retried(data_dir: Path) -> None:
    async with _serving(data_dir) as serve:
        with pytest.raises(Exception, match="401"):
            async with open_agent(url=serve.ws_url, token="wrong-token-0123456789"):
                pass


def test_open_agent_needs_a_command_or_a_url() -> None:
    async def both() -> None:
        async with open_agent(["x"], url="ws://127.0.0.1:1/acp"):
            pass

    with pytest.raises(ValueError, match="either"):
        asyncio.run(both())


async def test_without_resume_the_session_is_loaded_again_and_its_replay_kept_back() -> None:
    from engine.test_behaviour import RecordingClient

    from acpwire.client.connection import ClientSideConnection
    from acpwire.server import AcpAsgiApp, asgi_app, serve_in_background
    from acpwire.transports.remote import connect_remote

    from ._agents import LoadingAgent

    shelf: dict[str, list[str]] = {}
    events: list[Reconnected] = []
    back = asyncio.Event()

    def on_reconnect(event: Reconnected) -> None:
        events.append(event)
        back.set()

    def app() -> AcpAsgiApp:
        return asgi_app(lambda: LoadingAgent(shelf), auth=[TOKEN])

    async with serve_in_background(app()) as first:
        port = int(first.url.rsplit(":", 1)[1].split("/")[0])
        transport = await connect_remote(first.ws_url, token=TOKEN, on_reconnect=on_reconnect)
        handler = RecordingClient()
        conn = ClientSideConnection(handler, transport)
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
        await asyncio.wait_for(conn.agent.prompt(sid, [s.TextContent(text="stream 3")]), TIMEOUT)
    # The server is gone (a clean shutdown); another one comes up on the same port.
    async with serve_in_background(app(), port=port):
        await asyncio.wait_for(back.wait(), TIMEOUT)
        assert events[0].reattached == (sid,)
        assert handler.texts() == ["chunk 0", "chunk 1", "chunk 2"]  # no replay of them
        await asyncio.wait_for(conn.agent.prompt(sid, [s.TextContent(text="stream 1")]), TIMEOUT)
        assert handler.texts() == ["chunk 0", "chunk 1", "chunk 2", "chunk 0"]
        await conn.close()
