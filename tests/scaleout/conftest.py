"""The real parts of a scaled-out service: PostgreSQL, ``acp serve`` workers, HAProxy.

One throwaway PostgreSQL cluster serves the whole run (``postgres_cluster``); each
test gets a database of its own, three ``acp serve --demo --store postgresql://...``
workers as subprocesses on 127.0.0.1, and a real HAProxy in front of them, run with
the shipped ``deploy/haproxy.cfg`` (addresses passed through its environment
variables). Only a missing ``haproxy`` binary skips, with the reason printed;
``.ci/run`` installs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import os
import shutil
import signal
import socket
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg  # type: ignore[import-untyped]
import pytest
from server._serve import Serve, acp_serve
from waiting import TIMEOUT

from acpwire.testing.postgres import PostgresCluster

ROOT = Path(__file__).resolve().parents[2]
HAPROXY_CONFIG = ROOT / "deploy" / "haproxy.cfg"
ALICE = "alice-scaleout-token-0123456789"
BOB = "bob-scaleout-token-0123456789"
WORKERS = 3


@pytest.fixture(scope="session")
def haproxy_bin() -> str:
    found = shutil.which("haproxy") or next(
        (p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.access(p, os.X_OK)),
        None,
    )
    if found is None:
        reason = "haproxy not found (apt-get install haproxy; .ci/run installs it)"
        print(f"SKIPPED: {reason}", file=sys.stderr)
        pytest.skip(reason)
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Haproxy:
    proc: asyncio.subprocess.Process
    url: str
    socket_path: Path
    output: list[str] = field(default_factory=list[str])

    @property
    def ws_url(self) -> str:
        return "ws://" + self.url.split("://", 1)[1]

    async def command(self, line: str) -> str:
        """One command on HAProxy's admin socket, and its whole answer."""
        reader, writer = await asyncio.open_unix_connection(str(self.socket_path))
        try:
            writer.write(line.encode() + b"\n")
            await writer.drain()
            return (await asyncio.wait_for(reader.read(), TIMEOUT)).decode()
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def sessions_per_worker(self) -> dict[str, int]:
        """Client sessions (TCP connections) HAProxy has sent to each worker so far."""
        text = (await self.command("show stat")).lstrip("# ")
        rows = csv.DictReader(text.splitlines())
        return {
            row["svname"]: int(row["stot"] or 0)
            for row in rows
            if row["pxname"] == "acp_workers" and row["svname"].startswith("w")
        }


@dataclass
class Stack:
    """A scaled-out service: its database URL, its workers by cookie name, HAProxy."""

    dsn: str
    workers: dict[str, Serve]
    haproxy: Haproxy

    async def kill(self, name: str) -> None:
        proc = self.workers[name].proc
        proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(proc.wait(), TIMEOUT)


@contextlib.asynccontextmanager
async def _database(cluster: PostgresCluster) -> AsyncIterator[str]:
    name = f"scaleout_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(cluster.dsn())
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        yield cluster.dsn(name)
    finally:
        with contextlib.suppress(asyncpg.PostgresError):
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


@contextlib.asynccontextmanager
async def _haproxy(binary: str, workers: dict[str, Serve]) -> AsyncIterator[Haproxy]:
    port = _free_port()
    # A short folder of its own: a unix socket path must fit in 108 bytes.
    folder = Path(tempfile.mkdtemp(prefix="acp-haproxy-"))
    socket_path = folder / "admin.sock"
    env = {
        **os.environ,
        "ACP_LISTEN": f"127.0.0.1:{port}",
        "ACP_HAPROXY_SOCKET": str(socket_path),
    }
    for n in range(1, 4):  # the servers deploy/haproxy.cfg names; one not started is down
        env[f"ACP_WORKER_{n}"] = "127.0.0.1:1"
    for name, worker in workers.items():
        env[f"ACP_WORKER_{name[1:]}"] = worker.url.split("://", 1)[1].split("/", 1)[0]
    proc = await asyncio.create_subprocess_exec(
        binary,
        "-db",  # foreground, no daemon
        "-f",
        str(HAPROXY_CONFIG),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    haproxy = Haproxy(proc, f"http://127.0.0.1:{port}/acp", socket_path)

    async def drain() -> None:
        assert proc.stdout is not None
        while line := await proc.stdout.readline():
            haproxy.output.append(line.decode(errors="replace").rstrip())

    reading = asyncio.ensure_future(drain())

    async def ready() -> None:
        # Up once its admin socket answers (it binds the frontend before that).
        while True:
            if proc.returncode is not None:
                raise RuntimeError("haproxy exited:\n" + "\n".join(haproxy.output))
            with contextlib.suppress(OSError):
                await haproxy.command("show info")
                return
            await asyncio.sleep(0.05)

    try:
        await asyncio.wait_for(ready(), TIMEOUT)
        yield haproxy
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), TIMEOUT)
        await asyncio.wait_for(reading, TIMEOUT)
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.asynccontextmanager
async def _stack(
    cluster: PostgresCluster, haproxy_bin: str, tmp_path: Path, workers: int, *extra: str
) -> AsyncIterator[Stack]:
    async with contextlib.AsyncExitStack() as exits:
        dsn = await exits.enter_async_context(_database(cluster))
        env = {"ACPWIRE_DATA_DIR": str(tmp_path / "data")}

        async def start(n: int) -> tuple[str, Serve]:
            name = f"w{n}"
            serve = await exits.enter_async_context(
                acp_serve(
                    "--demo",
                    "--store",
                    dsn,
                    "--token",
                    ALICE,
                    "--token",
                    BOB,
                    "--worker-cookie",
                    f"ACPWORKER={name}",
                    *extra,
                    env=env,
                    port=str(_free_port()),
                )
            )
            return name, serve

        # One at a time: the first creates the tables, and exits unwind in order.
        started = dict([await start(n) for n in range(1, workers + 1)])
        haproxy = await exits.enter_async_context(_haproxy(haproxy_bin, started))
        yield Stack(dsn, started, haproxy)


@pytest.fixture
async def stack(
    postgres_cluster: PostgresCluster, haproxy_bin: str, tmp_path: Path
) -> AsyncIterator[Stack]:
    async with _stack(postgres_cluster, haproxy_bin, tmp_path, WORKERS) as built:
        yield built


@pytest.fixture
async def resumable_stack(
    postgres_cluster: PostgresCluster, haproxy_bin: str, tmp_path: Path
) -> AsyncIterator[Stack]:
    """Two workers serving ``--resumable`` (streams kept in PostgreSQL), keepalive 1 s."""
    async with _stack(
        postgres_cluster, haproxy_bin, tmp_path, 2, "--resumable", "--keepalive", "1"
    ) as built:
        yield built


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder
