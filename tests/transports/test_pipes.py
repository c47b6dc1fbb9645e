"""The pipe an agent streams through is widened, and a stalled reader still holds the
writer back: what a writer leaves unsent stays bounded and nothing is lost or reordered."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.engine.connection import INBOX_HIGH_WATER
from acpwire.transports import spawn
from acpwire.transports.pipes import READ_SIZE, STREAM_PIPE_SIZE, widen_pipe
from acpwire.transports.streams import (
    COALESCE_LIMIT,
    READ_LIMIT,
    WRITE_HIGH_WATER,
    StreamTransport,
)

AGENT = Path(__file__).resolve().parents[1] / "engine" / "agent_program.py"
INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
GET_PIPE_SIZE = getattr(fcntl, "F_GETPIPE_SZ", None)

linux_only = pytest.mark.skipif(GET_PIPE_SIZE is None, reason="pipe capacity is Linux's")


def pipe_size(fd: int) -> int:
    assert GET_PIPE_SIZE is not None
    return fcntl.fcntl(fd, GET_PIPE_SIZE)


@linux_only
def test_an_acpwire_agent_widens_the_pipe_it_answers_through() -> None:
    with subprocess.Popen(
        [sys.executable, str(AGENT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as agent:
        assert agent.stdin is not None and agent.stdout is not None
        before = pipe_size(agent.stdout.fileno())
        agent.stdin.write(INIT)
        agent.stdin.flush()
        answer = json.loads(agent.stdout.readline())  # the agent is serving: it has widened
        after = pipe_size(agent.stdout.fileno())
        agent.stdin.close()
        assert agent.wait(TIMEOUT) == 0
    assert answer["result"]["protocolVersion"] == 1
    assert before < STREAM_PIPE_SIZE
    assert after == STREAM_PIPE_SIZE


@linux_only
async def test_spawning_an_agent_widens_its_stdout_whatever_the_agent_is() -> None:
    probe = "import fcntl; print(fcntl.fcntl(1, fcntl.F_GETPIPE_SZ), flush=True); input()"
    transport = await spawn(sys.executable, ["-c", probe])
    try:
        line = await asyncio.wait_for(transport.receive(), TIMEOUT)
    finally:
        await transport.close()
    assert line == str(STREAM_PIPE_SIZE).encode()


def test_widening_something_that_is_not_a_pipe_changes_nothing(tmp_path: Path) -> None:
    with (tmp_path / "file").open("wb") as file:
        assert widen_pipe(file.fileno()) is False


@pytest.mark.slow
async def test_a_stalled_reader_holds_the_writer_back_and_loses_nothing() -> None:
    loop = asyncio.get_running_loop()
    read_fd, write_fd = os.pipe()
    widen_pipe(write_fd)
    pipe_transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(write_fd, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(pipe_transport, protocol, None, loop)
    transport = StreamTransport(asyncio.StreamReader(), writer)
    line = b'{"jsonrpc":"2.0","method":"session/update","params":{"n":%07d}}'
    total = 60_000  # ~4 MiB: more than the pipe and the transport may hold together
    sent = 0

    async def stream() -> None:
        nonlocal sent
        for i in range(total):
            await transport.send(line % i)
            sent = i + 1

    sender = asyncio.ensure_future(stream())
    # Nobody reads: the sender must come to a stop (waiting for the pipe to drain) instead
    # of buffering everything and finishing.
    await wait_until(
        lambda: sender.done() or pipe_transport.get_write_buffer_size() > WRITE_HIGH_WATER,
        "the sender stops or finishes",
    )
    assert not sender.done(), "the writer ran ahead of a reader that reads nothing"
    capacity = pipe_size(read_fd) if GET_PIPE_SIZE is not None else 64 * 1024
    assert sent * (len(line % 0) + 1) <= capacity + WRITE_HIGH_WATER + 2 * COALESCE_LIMIT

    # The reader comes back: every line arrives, once and in order.
    def read_all() -> bytes:
        chunks = []
        while chunk := os.read(read_fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)

    reading = asyncio.ensure_future(asyncio.to_thread(read_all))
    await asyncio.wait_for(sender, TIMEOUT)
    await transport.close()
    received = (await asyncio.wait_for(reading, TIMEOUT)).split(b"\n")
    os.close(read_fd)
    assert received.pop() == b""
    assert received == [line % i for i in range(total)]


async def test_messages_longer_than_one_read_arrive_whole_and_in_order() -> None:
    """Pipes are read 64 KiB at a time: a line spans many reads, and a read ends many lines."""

    class Texts(Client):
        def __init__(self) -> None:
            self.texts: list[str] = []

        async def session_update(self, params: s.SessionNotification) -> None:
            update = params.update
            if isinstance(update, s.AgentMessageChunk) and isinstance(
                update.content, s.TextContent
            ):
                self.texts.append(update.content.text)

    client = Texts()
    conn = ClientSideConnection(client, await spawn(sys.executable, [str(AGENT)]))
    try:
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        session = await asyncio.wait_for(conn.agent.new_session(os.getcwd()), TIMEOUT)
        sizes = [1, 65_535, 65_536, 70_000, 3 * 1024 * 1024 + 7, 10]
        sent = [f"{i}:" + "x" * size for i, size in enumerate(sizes)]
        for text in sent:
            await asyncio.wait_for(conn.agent.prompt(session.session_id, f"echo {text}"), TIMEOUT)
        streamed = await asyncio.wait_for(
            conn.agent.prompt(session.session_id, "stream 3000"), TIMEOUT
        )
    finally:
        await conn.close()
    assert streamed.stop_reason == "end_turn"
    assert client.texts == sent + [f"chunk {i}" for i in range(3000)]


@pytest.mark.slow
async def test_a_client_whose_handler_is_stuck_stops_reading_the_agents_pipe() -> None:
    """The engine stops taking messages when its handlers are behind; the pipe under it
    must stop too, or the agent's stream piles up unread in the client's memory."""
    gate = asyncio.Event()

    class Stuck(Client):
        def __init__(self) -> None:
            self.count = 0

        async def session_update(self, params: s.SessionNotification) -> None:
            self.count += 1
            await gate.wait()

    client = Stuck()
    transport = await spawn(sys.executable, [str(AGENT)])
    conn = ClientSideConnection(client, transport)
    try:
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        session = await asyncio.wait_for(conn.agent.new_session(os.getcwd()), TIMEOUT)
        total = 100_000  # ~15 MiB of updates
        turn = asyncio.ensure_future(conn.agent.prompt(session.session_id, f"stream {total}"))
        reader = transport._stream._reader  # asyncio's buffer under the transport

        # reader._paused: set when asyncio stops reading the pipe
        await wait_until(lambda: reader._paused, "the client stops reading the pipe")
        assert len(reader._buffer) <= 2 * READ_LIMIT + READ_SIZE
        assert len(conn.connection._inbox) <= INBOX_HIGH_WATER + 1
        gate.set()
        result = await asyncio.wait_for(turn, TIMEOUT)
    finally:
        gate.set()
        await conn.close()
    assert result.stop_reason == "end_turn"
    assert client.count == total
