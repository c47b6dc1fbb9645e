"""This process's stdin/stdout as an ACP transport (the agent side of stdio).

Nothing but protocol may reach stdout. :func:`stdio_transport` therefore moves
the real stdout to a private file descriptor for protocol messages and points
descriptor 1 at stderr, so a stray ``print()`` (or a child process writing to
its inherited stdout) lands in the log instead of corrupting the stream.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
import threading
from typing import Any

from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE
from .pipes import read_heap_sized, widen_pipe
from .streams import READ_LIMIT, StreamTransport


def _claim_stdout() -> int:
    """Return a private descriptor for the protocol; fd 1 then writes to stderr."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    proto_fd = os.dup(1)
    os.dup2(2, 1)
    return proto_fd


def _watchable(fd: int) -> bool:
    """Whether the event loop can poll ``fd``: pipes, sockets and terminals can; regular
    files and devices such as /dev/null cannot (epoll refuses them)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


async def _pipe_reader(fd: int, loop: asyncio.AbstractEventLoop) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=READ_LIMIT)
    protocol = asyncio.StreamReaderProtocol(reader)
    if _watchable(fd):
        try:
            transport, _ = await loop.connect_read_pipe(
                lambda: protocol, os.fdopen(fd, "rb", buffering=0, closefd=False)
            )
            read_heap_sized(transport)
            return reader
        except (ValueError, OSError):
            pass

    # Not pollable (a regular file, /dev/null): read it on a daemon thread, which
    # never keeps the process alive at exit.
    def deliver(callback: Any, *args: Any) -> bool:
        try:
            loop.call_soon_threadsafe(callback, *args)
        except RuntimeError:  # the loop is closed
            return False
        return True

    def pump() -> None:
        while True:
            try:
                data = os.read(fd, 256 * 1024)
            except OSError:
                data = b""
            if not data:
                deliver(reader.feed_eof)
                return
            if not deliver(reader.feed_data, data):
                return

    threading.Thread(target=pump, name="acpwire-stdin", daemon=True).start()
    return reader


class _BlockingTransport(asyncio.WriteTransport):
    """Write transport for a descriptor the event loop cannot watch (a regular file)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd
        self._closing = False

    def write(self, data: Any) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        self._closing = True


async def _pipe_writer(
    fd: int, reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop
) -> asyncio.StreamWriter:
    transport: asyncio.WriteTransport | None = None
    protocol = asyncio.streams.FlowControlMixin(loop)
    if _watchable(fd):
        try:
            transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, os.fdopen(fd, "wb", buffering=0)
            )
        except (ValueError, OSError):
            transport = None
    if transport is None:
        transport = _BlockingTransport(fd)
    return asyncio.StreamWriter(transport, protocol, reader, loop)


async def stdio_transport(
    *, protect_stdout: bool = True, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
) -> StreamTransport:
    """A transport on this process's stdin and stdout."""
    loop = asyncio.get_running_loop()
    out_fd = _claim_stdout() if protect_stdout else os.dup(1)
    widen_pipe(out_fd)  # the direction of a turn's stream (pipes.py)
    reader = await _pipe_reader(sys.stdin.fileno(), loop)
    writer = await _pipe_writer(out_fd, reader, loop)
    return StreamTransport(reader, writer, max_message_size=max_message_size)
