"""Run ``acp serve`` as a real subprocess and read what it prints."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import re
import resource
import signal
import struct
import sys
import termios
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from cli.processes import alive
from waiting import TIMEOUT, wait_until

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "engine" / "agent_program.py"
HOSTILE = ROOT / "tests" / "server" / "hostile_agent.py"
ENV_AGENT = ROOT / "tests" / "server" / "env_agent.py"
TOKEN_ENV = "ACP_SERVE_TOKEN"


@dataclass
class Serve:
    """A running ``acp serve``: its process, address, token and every stderr line so far."""

    proc: asyncio.subprocess.Process
    url: str
    token: str | None
    lines: list[str] = field(default_factory=list[str])
    _new_line: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def ws_url(self) -> str:
        scheme, rest = self.url.split("://", 1)
        return ("wss" if scheme == "https" else "ws") + "://" + rest

    async def wait_for_line(self, pattern: str) -> re.Match[str]:
        """The first stderr line matching ``pattern`` (waits, bounded by the caller)."""
        seen = 0
        while True:
            for line in self.lines[seen:]:
                match = re.search(pattern, line)
                if match:
                    return match
            seen = len(self.lines)
            self._new_line.clear()
            await self._new_line.wait()


async def _drain(serve: Serve, stream: asyncio.StreamReader) -> None:
    while line := await stream.readline():
        serve.lines.append(line.decode(errors="replace").rstrip("\n"))
        serve._new_line.set()
    serve._new_line.set()


@contextlib.asynccontextmanager
async def acp_serve(
    *args: str, env: dict[str, str] | None = None, port: str = "0", fd_limit: int | None = None
) -> AsyncIterator[Serve]:
    """``acp serve --port PORT ARGS...``; reads the address (and a generated token).

    ``fd_limit``: the server may open at most this many descriptors (RLIMIT_NOFILE).
    """

    def limit_fds() -> None:
        if fd_limit is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))

    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acpwire.cli.main",
        "serve",
        "--port",
        port,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        # The caller's own ACP_SERVE_TOKEN must not change what the tests see.
        env={**os.environ, "PYTHONPATH": str(ROOT / "src"), TOKEN_ENV: "", **(env or {})},
        preexec_fn=limit_fds if fd_limit is not None else None,
    )
    assert proc.stderr is not None
    serve = Serve(proc, "", None)
    drain = asyncio.ensure_future(_drain(serve, proc.stderr))
    try:
        match = await asyncio.wait_for(serve.wait_for_line(r"listening on (https?://\S+)"), TIMEOUT)
        serve.url = match.group(1)
        if (
            "--no-auth" not in args
            and "--token" not in args
            and not (env or {}).get("ACP_SERVE_TOKEN")
        ):
            token = await asyncio.wait_for(serve.wait_for_line(r"token: (\S+)"), TIMEOUT)
            serve.token = token.group(1)
        yield serve
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), TIMEOUT)
        await asyncio.wait_for(drain, TIMEOUT)


def open_fds(pid: int) -> int:
    """How many descriptors process ``pid`` has open (Linux /proc)."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss(pid: int) -> int:
    """Resident memory of process ``pid``, in bytes (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def children(pid: int) -> set[int]:
    """Process ids of ``pid``'s direct children (Linux /proc)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.update(int(t) for t in text)
    return found


def stdin_full(pid: int) -> bool:
    """Whether the pipe on ``pid``'s stdin is full: it reads nothing, and a writer to it
    waits (Linux: the pipe is opened again through /proc, and never read)."""
    fd = os.open(f"/proc/{pid}/fd/0", os.O_RDONLY | os.O_NONBLOCK)
    try:
        (held,) = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))
        return bool(held >= fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ))
    finally:
        os.close(fd)


async def wait_gone(pid: int) -> bool:
    """Wait until ``pid`` has exited."""
    return await wait_until(lambda: not alive(pid), f"process {pid} exits")
