#!/usr/bin/env python3
"""Scale-out: ``acp serve --demo`` workers on one SQLite file or one PostgreSQL, one and two.

Run from the repository root with acpwire's virtual environment:

    .venv/bin/python benchmarks/bench_scaleout.py            # full run (about 4 minutes on 2 cores)
    .venv/bin/python benchmarks/bench_scaleout.py --quick    # smoke run
    .venv/bin/python benchmarks/bench_scaleout.py --postgres postgresql://user:pw@host/db
    .venv/bin/python benchmarks/bench_scaleout.py --json
    .venv/bin/python benchmarks/bench_scaleout.py --principals 1   # one token

The remote path end to end: each worker is a real ``acp serve --demo --store URL``
process on 127.0.0.1; clients are acpwire's low-tier client over WebSocket, in this
process, one connection per worker. With ``haproxy`` installed, the two-worker rows
are measured once more through HAProxy running ``deploy/haproxy.cfg``. PostgreSQL
is a throwaway cluster with durable commits (as in ``bench_store.py``, whose
storage helpers this reuses) unless ``--postgres`` names one. The workers accept
two tokens (``--principals``, default 2), as a service with several users does:
each session's owner is then written into the store (with one token, the only
principal is the default owner and no owner is written).

For every store and worker count:

(a) ``session/new`` per second, two ways. Sequential: one client connection per
    worker creates sessions one after another (one request in flight per
    worker: a latency figure, each call waits for the client, the worker and
    the database in turn). Concurrent: 8 connections per worker, each
    sequential, all at once (what a worker serves when many users create
    sessions together: its capacity). N sessions in all, the total and the
    figure per worker; with the CPU time each process spent per
    ``session/new`` (this client, the workers, the PostgreSQL server) read
    from ``/proc``, since all of them share the same cores;
(b) prompt round trip: M sequential ``stream 1`` prompts per client (a turn with one
    chunk, its history committed before the answer), all clients at once; p50, p99;
(c) replay: a session holding 10,000 messages (written into the store beforehand,
    one ``messageId`` each) loaded through the first worker: time from the
    ``session/load`` request to its answer, every replayed update received;
(d) for reference, ``store.create`` per second in this process, without any
    protocol (the store's own ceiling, as ``bench_store.py`` measures it).

Every figure is the best of three runs. No figure is asserted: the targets of
issue 12 (>= 1,000 ``session/new``/s per worker on PostgreSQL, judged on the
concurrent figure; replay of 10,000 messages under 1 s) are printed beside what
was measured.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as _dt
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_store import Stores, best, direct_creates, load_average, log  # noqa: E402

from acpwire import schema as s  # noqa: E402
from acpwire.client.connection import Client, ClientSideConnection  # noqa: E402
from acpwire.server.security import token_principal  # noqa: E402
from acpwire.store import SessionRecord, open_store  # noqa: E402
from acpwire.transports.websocket import connect_websocket  # noqa: E402

TOKEN = "bench-scaleout-token-0123456789"
CWD = os.path.abspath(os.sep)
HAPROXY_CONFIG = ROOT / "deploy" / "haproxy.cfg"
START_TIMEOUT = 60.0

PLANS: dict[str, dict[str, int]] = {
    "full": {"sessions": 1000, "rt": 500, "messages": 10_000},
    "quick": {"sessions": 200, "rt": 100, "messages": 10_000},
}
TARGET_NEW_PER_WORKER = 1000
CONCURRENT = 8
"""Client connections per worker for the concurrent ``session/new`` figure."""
TARGET_REPLAY_S = 1.0


class Counting(Client):
    def __init__(self) -> None:
        self.updates = 0

    async def session_update(self, params: s.SessionNotification) -> None:
        self.updates += 1


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _cpu_seconds(pids: list[int], *, with_children: bool = False) -> float | None:
    """User + system CPU time of ``pids`` (and, if asked, their children) from ``/proc``;
    None where ``/proc`` is not there."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    stats: dict[int, tuple[int, float]] = {}  # pid -> (parent, cpu seconds)
    wanted = None if with_children else set(pids)
    try:
        entries = os.listdir("/proc") if with_children else [str(p) for p in pids]
    except OSError:
        return None
    for entry in entries:
        if not entry.isdigit() or (wanted is not None and int(entry) not in wanted):
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        stats[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    if not stats:
        return None
    roots = set(pids)
    return sum(cpu for pid, (parent, cpu) in stats.items() if pid in roots or parent in roots)


class CpuMeter:
    """CPU seconds of this client, the workers and the database between two readings."""

    def __init__(self, workers: list[int], database: int | None) -> None:
        self.workers, self.database = workers, database

    def read(self) -> tuple[float, float | None, float | None]:
        database = (
            None if self.database is None else _cpu_seconds([self.database], with_children=True)
        )
        return time.process_time(), _cpu_seconds(self.workers), database


@contextlib.asynccontextmanager
async def workers(
    store: str, count: int, principals: int = 1
) -> AsyncIterator[tuple[list[str], list[int]]]:
    """``count`` ``acp serve --demo --store STORE`` processes; yields addresses and pids.

    With ``principals`` > 1 the workers accept that many tokens (the client uses the
    first): no principal is then the default owner, and each session's owner is
    written into the store, as on a service with many users.
    """
    tokens = [TOKEN] + [f"{TOKEN}-other-{n}" for n in range(1, principals)]
    procs: list[asyncio.subprocess.Process] = []
    addresses: list[str] = []
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "ACP_SERVE_TOKEN": TOKEN}
    try:
        for n in range(1, count + 1):
            address = f"127.0.0.1:{_free_port()}"
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "acpwire.cli.main",
                "serve",
                "--demo",
                "--store",
                store,
                "--port",
                address.rsplit(":", 1)[1],
                "--worker-cookie",
                f"ACPWORKER=w{n}",
                "--max-agents",
                "256",
                *(arg for token in tokens for arg in ("--token", token)),
                stdin=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                env=env,
            )
            procs.append(proc)
            assert proc.stderr is not None

            async def listening(stream: asyncio.StreamReader) -> None:
                while line := await stream.readline():
                    if b"listening on" in line:
                        return
                raise RuntimeError("acp serve exited before listening")

            await asyncio.wait_for(listening(proc.stderr), START_TIMEOUT)
            addresses.append(address)
        yield addresses, [p.pid for p in procs]
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            await asyncio.wait_for(proc.wait(), START_TIMEOUT)


@contextlib.asynccontextmanager
async def haproxy(addresses: list[str]) -> AsyncIterator[str]:
    """HAProxy with deploy/haproxy.cfg in front of the workers; yields its address."""
    binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
    folder = Path(tempfile.mkdtemp(prefix="acp-haproxy-"))
    listen = f"127.0.0.1:{_free_port()}"
    env = {**os.environ, "ACP_LISTEN": listen, "ACP_HAPROXY_SOCKET": str(folder / "admin.sock")}
    for n in range(1, 4):  # the config names three workers: unused lines are disabled below
        env[f"ACP_WORKER_{n}"] = addresses[(n - 1) % len(addresses)]
    proc = await asyncio.create_subprocess_exec(
        binary,
        "-db",
        "-f",
        str(HAPROXY_CONFIG),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
    )
    try:
        host, port = listen.rsplit(":", 1)
        for _ in range(200):
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection(host, int(port))
                writer.close()
                break
            await asyncio.sleep(0.05)
        for n in range(len(addresses) + 1, 4):
            reader, writer = await asyncio.open_unix_connection(str(folder / "admin.sock"))
            writer.write(f"disable server acp_workers/w{n}\n".encode())
            await writer.drain()
            await reader.read()
            writer.close()
        yield listen
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(proc.wait(), START_TIMEOUT)
        shutil.rmtree(folder, ignore_errors=True)


async def connect(address: str) -> tuple[ClientSideConnection, Counting]:
    handler = Counting()
    conn = ClientSideConnection(
        handler, await connect_websocket(f"ws://{address}/acp", token=TOKEN)
    )
    await conn.initialize()
    return conn, handler


async def new_per_second(
    targets: list[str], n: int, meter: CpuMeter
) -> tuple[float, float | None, float | None, float | None]:
    """``n`` ``session/new`` split over one connection per target, each sequential, all at once.

    Returns the rate and the CPU microseconds per ``session/new`` of this
    client, the workers and the database (None where unknown).
    """
    conns = [await connect(a) for a in targets]
    each = n // len(conns)
    try:

        async def run(conn: ClientSideConnection) -> None:
            for _ in range(each):
                await conn.agent.new_session(CWD)

        before = meter.read()
        started = time.perf_counter()
        await asyncio.gather(*(run(c) for c, _ in conns))
        elapsed = time.perf_counter() - started
        after = meter.read()
    finally:
        for conn, _ in conns:
            await conn.close()
    done = each * len(conns)
    per_new = [
        None if b is None or a is None else (a - b) / done * 1e6
        for b, a in zip(before, after, strict=True)
    ]
    return done / elapsed, per_new[0], per_new[1], per_new[2]


async def round_trips(targets: list[str], m: int) -> tuple[float, float]:
    conns = [await connect(a) for a in targets]
    times: list[float] = []
    try:

        async def run(conn: ClientSideConnection) -> None:
            sid = (await conn.agent.new_session(CWD)).session_id
            prompt = [s.TextContent(text="stream 1")]
            for _ in range(m):
                started = time.perf_counter()
                await conn.agent.prompt(sid, prompt)
                times.append(time.perf_counter() - started)

        await asyncio.gather(*(run(c) for c, _ in conns))
    finally:
        for conn, _ in conns:
            await conn.close()
    times.sort()
    return statistics.median(times) * 1000, times[int(len(times) * 0.99)] * 1000


async def seed_history(store_url: str, messages: int, owner: str | None) -> str:
    """A session holding ``messages`` agent messages, written straight into the store."""
    store = open_store(store_url)
    sid = f"sess_bench_{uuid.uuid4().hex}"
    try:
        await store.create(SessionRecord(session_id=sid, cwd=CWD, owner=owner))
        updates = [
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": f"m{i}",
                "content": {"type": "text", "text": f"message {i} of the long session"},
            }
            for i in range(messages)
        ]
        for start in range(0, messages, 1000):
            await store.extend(sid, updates[start : start + 1000])
    finally:
        await store.aclose()
    return sid


async def replay(address: str, sid: str) -> tuple[float, int]:
    conn, handler = await connect(address)
    try:
        started = time.perf_counter()
        await conn.agent.load_session(sid, CWD)
        return time.perf_counter() - started, handler.updates
    finally:
        await conn.close()


async def measure(
    stores: Stores,
    kind: str,
    count: int,
    plan: dict[str, int],
    via_haproxy: bool,
    principals: int,
) -> dict[str, Any]:
    url = await stores.url(kind)
    label = f"{kind}, {count} worker{'s' if count > 1 else ''}" + (
        " via HAProxy" if via_haproxy else ""
    )
    log(f"{label}...")
    async with workers(url, count, principals) as (addresses, pids):
        meter = CpuMeter(pids, stores.database_pid if kind == "postgres" else None)
        # With several principals, the benchmark's own (whose token the client uses).
        owner = token_principal(TOKEN) if principals > 1 else None
        sid = await seed_history(url, plan["messages"], owner)
        creates = await best(lambda: direct_creates(url, plan["sessions"]))
        if via_haproxy:
            async with haproxy(addresses) as front:
                targets = [front] * count
                return await _figures(label, targets, front, sid, plan, meter, creates)
        return await _figures(label, addresses, addresses[0], sid, plan, meter, creates)


async def _figures(
    label: str,
    targets: list[str],
    first: str,
    sid: str,
    plan: dict[str, int],
    meter: CpuMeter,
    store_creates: float,
) -> dict[str, Any]:
    count = len(targets)
    await new_per_second(targets * CONCURRENT, 20 * count * CONCURRENT, meter)  # warm up
    new, *_ = await best(lambda: new_per_second(targets, plan["sessions"], meter))
    many, client_us, workers_us, db_us = await best(
        lambda: new_per_second(targets * CONCURRENT, plan["sessions"], meter)
    )
    p50, p99 = await best(lambda: round_trips(targets, plan["rt"] // count), lower=True)
    seconds, updates = await best(lambda: replay(first, sid), lower=True)
    return {
        "store_create_per_s": store_creates,
        "config": label,
        "new_per_s": new,
        "new_per_s_per_worker": new / count,
        "new_concurrent_per_s": many,
        "new_concurrent_per_s_per_worker": many / count,
        "cpu_us_per_new_client": client_us,
        "cpu_us_per_new_workers": workers_us,
        "cpu_us_per_new_database": db_us,
        "rt_p50_ms": p50,
        "rt_p99_ms": p99,
        "replay_s": seconds,
        "replay_updates": updates,
    }


def _us(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f}"


def _ceiling(row: dict[str, Any]) -> str:
    """``session/new`` per second one worker could serve with a core to itself."""
    worker_us = row["cpu_us_per_new_workers"]
    return "?" if not worker_us else f"{1e6 / worker_us:,.0f}"


def report(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [
        f"bench_scaleout ({meta['plan']} plan) {meta['date']}, Python {meta['python']}, "
        f"{meta['cpus']} CPUs, load average {meta['load_start']} -> {meta['load_end']}, "
        f"{meta['principals']} principal(s) per worker",
        "",
        f"| configuration | session/new/s sequential (per worker) | session/new/s concurrent, "
        f"{CONCURRENT} conns/worker (per worker) | CPU us per session/new: client / workers "
        "/ PostgreSQL | worker core ceiling/s | rt p50 ms | rt p99 ms | replay 10k msgs "
        "| store.create/s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        cpu = " / ".join(
            _us(row[f"cpu_us_per_new_{who}"]) for who in ("client", "workers", "database")
        )
        lines.append(
            f"| {row['config']} | {row['new_per_s']:,.0f} ({row['new_per_s_per_worker']:,.0f}) "
            f"| {row['new_concurrent_per_s']:,.0f} "
            f"({row['new_concurrent_per_s_per_worker']:,.0f}) | {cpu} | {_ceiling(row)} "
            f"| {row['rt_p50_ms']:.2f} | {row['rt_p99_ms']:.1f} "
            f"| {row['replay_s'] * 1000:,.0f} ms [{row['replay_updates']:,} upd] "
            f"| {row['store_create_per_s']:,.0f} |"
        )
    lines.append("")
    for row in rows:
        if row["config"].startswith("postgres"):
            figure = row["new_concurrent_per_s_per_worker"]
            met = figure >= TARGET_NEW_PER_WORKER
            lines.append(
                f"target session/new >= {TARGET_NEW_PER_WORKER}/s per worker (concurrent), "
                f"{row['config']}: {figure:,.0f}/s ({'met' if met else 'NOT met'}; "
                f"sequential {row['new_per_s_per_worker']:,.0f}/s)"
            )
    for row in rows:
        met = row["replay_s"] < TARGET_REPLAY_S
        lines.append(
            f"target replay of 10,000 messages < {TARGET_REPLAY_S:g} s, {row['config']}: "
            f"{row['replay_s'] * 1000:,.0f} ms ({'met' if met else 'NOT met'})"
        )
    return "\n".join(lines)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small N (smoke run)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--postgres", metavar="URL", help="an existing PostgreSQL to use")
    parser.add_argument(
        "--principals",
        type=int,
        default=2,
        metavar="N",
        help="tokens each worker accepts (default 2: owners are written to the store)",
    )
    args = parser.parse_args()
    plan_name = "quick" if args.quick else "full"
    plan = PLANS[plan_name]
    meta = {
        "plan": plan_name,
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_start": load_average(),
        "principals": args.principals,
    }
    stores = Stores(args.postgres)
    stores.start()
    kinds = ["sqlite"] + (["postgres"] if stores.skip_postgres is None else [])
    if stores.skip_postgres:
        log(f"postgres skipped: {stores.skip_postgres}")
    has_haproxy = shutil.which("haproxy") is not None or os.access("/usr/sbin/haproxy", os.X_OK)
    rows: list[dict[str, Any]] = []
    try:
        for kind in kinds:
            for count in (1, 2):
                rows.append(await measure(stores, kind, count, plan, False, args.principals))
            if has_haproxy:
                rows.append(await measure(stores, kind, 2, plan, True, args.principals))
    finally:
        stores.stop()
    meta["load_end"] = load_average()
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=2))
    else:
        print(report(rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
