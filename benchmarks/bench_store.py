#!/usr/bin/env python3
"""Session stores under a real AgentApp over stdio: memory, SQLite and PostgreSQL.

Run from the repository root with acpwire's virtual environment:

    .venv/bin/python benchmarks/bench_store.py             # full run (2-4 minutes on 2 cores)
    .venv/bin/python benchmarks/bench_store.py --quick     # smoke run
    .venv/bin/python benchmarks/bench_store.py --postgres postgresql://user:pw@host/db
    .venv/bin/python benchmarks/bench_store.py --json

Without ``--postgres`` a throwaway PostgreSQL cluster is started (the server
binaries must be installed; see ``acpwire.testing.postgres``) with durable
commits (``fsync`` and ``synchronous_commit`` on, unlike the test cluster).
Each store gets a fresh file or database.

For every store, one agent process (``store_agent.py STORE_URL``) and acpwire's
low-tier client over its stdin/stdout:

(a) ``session/new`` per second, N sequential calls;
(b) prompt round trip: M sequential trivial prompts, p50 and p99;
(c) streaming: one turn of N ``turn.say`` chunks (64 bytes); messages/s until
    the response and every update arrived;
(d) replay of 10,000 messages: a turn sends 10,000 one-chunk messages (each its
    own messageId), then ``session/load`` on the same connection; time from the
    request to its answer (every replayed update arrives before it);
(e) replay of 100,000 streamed chunks: one turn of 100,000 ``turn.say``, then
    ``session/load``; and the same history written the old way, one record per
    chunk (``legacy``), which replay merges on read;
(f) two workers: two agent processes on one store, ``session/new`` from both
    at once (SQLite and PostgreSQL);
(g) in-process: ``store.create`` per second without any protocol.

The low-tier agent (``acpwire_agent.py``, no store) is the reference row for
(a)-(c). Every figure is the best of three runs (on a shared machine,
interference only makes figures worse). Ratios compare figures of the same
run. No figure is asserted here: the targets are printed next to what was
measured.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _scenario import load_average  # noqa: E402

from acpwire import schema as s  # noqa: E402
from acpwire.client.connection import Client, ClientSideConnection  # noqa: E402
from acpwire.store import SessionRecord, open_store  # noqa: E402
from acpwire.transports import spawn  # noqa: E402

STORE_AGENT = HERE / "store_agent.py"
LOW_TIER_AGENT = HERE / "acpwire_agent.py"
CWD = os.path.abspath(os.sep)

PLANS: dict[str, dict[str, int]] = {
    "full": {
        "sessions": 2000,
        "rt": 1000,
        "stream": 50_000,
        "messages": 10_000,
        "chunks": 100_000,
        "create": 2000,
    },
    "quick": {
        "sessions": 200,
        "rt": 200,
        "stream": 5000,
        "messages": 10_000,
        "chunks": 100_000,
        "create": 200,
    },
}

TARGETS = [
    ("PostgreSQL session/new per worker", ">= 1,000/s"),
    ("SQLite session/new", ">= 2,000/s"),
    ("replay of 10,000 messages", "< 1 s"),
    ("replay of 100,000 streamed chunks", "< 1 s"),
    ("AgentApp + SQLite streaming vs low tier", ">= 0.5x"),
]


class Counter(Client):
    def __init__(self) -> None:
        self.updates = 0

    async def session_update(self, params: s.SessionNotification) -> None:
        self.updates += 1


class Agent:
    """One agent process and the client connected to it."""

    def __init__(self, script: Path, args: list[str]) -> None:
        self.script, self.args = script, args
        self.client = Counter()
        self.conn: ClientSideConnection | None = None

    async def __aenter__(self) -> Agent:
        transport = await spawn(sys.executable, [str(self.script), *self.args])
        self.conn = ClientSideConnection(self.client, transport)
        await self.conn.initialize()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.conn is not None
        await self.conn.close()

    @property
    def peer(self) -> Any:
        assert self.conn is not None
        return self.conn.agent

    async def new_session(self) -> str:
        return str((await self.peer.new_session(CWD)).session_id)

    async def sessions_per_second(self, n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            await self.new_session()
        return n / (time.perf_counter() - start)

    async def round_trips(self, sid: str, n: int) -> tuple[float, float]:
        times = []
        for _ in range(n):
            start = time.perf_counter()
            await self.peer.prompt(sid, "ping")
            times.append(time.perf_counter() - start)
        times.sort()
        return statistics.median(times) * 1000, times[int(len(times) * 0.99) - 1] * 1000

    async def turn(self, sid: str, text: str) -> tuple[float, int]:
        """Seconds for one prompt (every update arrives before the answer) and the updates."""
        self.client.updates = 0
        start = time.perf_counter()
        await self.peer.prompt(sid, text)
        return time.perf_counter() - start, self.client.updates

    async def load(self, sid: str) -> tuple[float, int]:
        self.client.updates = 0
        start = time.perf_counter()
        await self.peer.load_session(sid, CWD)
        return time.perf_counter() - start, self.client.updates


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- stores


class Stores:
    """Fresh storage for each measured store: a temp folder, a PostgreSQL database each."""

    def __init__(self, postgres: str | None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="acpwire-bench-"))
        self.postgres = postgres
        self.cluster: Any = None
        self.skip_postgres: str | None = None

    def start(self) -> None:
        if self.postgres is not None:
            return
        from acpwire.testing.postgres import PostgresCluster, find_postgres_bin

        if find_postgres_bin() is None:
            self.skip_postgres = "PostgreSQL server binaries not found (pass --postgres URL)"
            return
        log("starting a throwaway PostgreSQL cluster (durable commits)...")
        self.cluster = PostgresCluster(
            settings={"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
        ).start()
        self.postgres = self.cluster.dsn()

    @property
    def database_pid(self) -> int | None:
        """The throwaway PostgreSQL server's process id (None for one given by URL)."""
        return None if self.cluster is None else self.cluster.pid

    async def url(self, kind: str) -> str:
        name = f"bench_{uuid.uuid4().hex[:8]}"
        if kind == "memory":
            return "memory:"
        if kind == "sqlite":
            return str(self.folder / f"{name}.sqlite3")
        assert self.postgres is not None
        import asyncpg  # type: ignore[import-untyped]

        conn = await asyncpg.connect(self.postgres)
        try:
            await conn.execute(f"CREATE DATABASE {name}")
        finally:
            await conn.close()
        base, _, _ = self.postgres.rpartition("/")
        return f"{base}/{name}"

    def stop(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


# --------------------------------------------------------------------------- measuring


ROUNDS = 3
"""Each figure is the best of this many runs: interference only ever makes a figure worse."""


async def best(measure: Any, rounds: int = ROUNDS, lower: bool = False) -> Any:
    """The best result of ``rounds`` calls of ``measure()`` (tuples compare by first item)."""
    results = [await measure() for _ in range(rounds)]
    return min(results) if lower else max(results)


async def measure_store(kind: str, stores: Stores, plan: dict[str, int]) -> dict[str, Any]:
    url = await stores.url(kind)
    row: dict[str, Any] = {"name": f"AgentApp + {kind}"}
    async with Agent(STORE_AGENT, [url]) as agent:
        await agent.sessions_per_second(20)  # warm up
        row["sessions_per_s"] = await best(lambda: agent.sessions_per_second(plan["sessions"]))
        sid = await agent.new_session()
        row["rt_p50_ms"], row["rt_p99_ms"] = await best(
            lambda: agent.round_trips(sid, plan["rt"]), lower=True
        )

        async def stream() -> float:
            elapsed, got = await agent.turn(await agent.new_session(), f"stream {plan['stream']}")
            assert got == plan["stream"], got
            return plan["stream"] / elapsed

        row["stream_msg_per_s"] = await best(stream)

        sid = await agent.new_session()
        await agent.turn(sid, f"messages {plan['messages']}")
        row["replay_10k_messages_s"], replayed = await best(lambda: agent.load(sid), lower=True)
        assert replayed == plan["messages"] + 1, replayed  # and the prompt

        sid = await agent.new_session()
        row["stream_100k_s"], _ = await agent.turn(sid, f"stream {plan['chunks']}")
        row["replay_100k_chunks_s"], replayed = await best(lambda: agent.load(sid), lower=True)
        row["replay_100k_chunks_updates"] = replayed

        sid = await agent.new_session()
        await agent.turn(sid, f"legacy {plan['chunks']}")
        row["replay_100k_legacy_s"], replayed = await best(lambda: agent.load(sid), lower=True)
        row["replay_100k_legacy_updates"] = replayed
    if kind != "memory":
        row["two_workers_sessions_per_s"] = await two_workers(url, plan["sessions"])
    row["store_create_per_s"] = await best(lambda: direct_creates(url, plan["create"]))
    return row


async def two_workers(url: str, n: int) -> float:
    async with Agent(STORE_AGENT, [url]) as a, Agent(STORE_AGENT, [url]) as b:
        await a.sessions_per_second(20)
        await b.sessions_per_second(20)

        async def both() -> float:
            start = time.perf_counter()
            await asyncio.gather(a.sessions_per_second(n), b.sessions_per_second(n))
            return 2 * n / (time.perf_counter() - start)

        return float(await best(both))


async def direct_creates(url: str, n: int) -> float:
    async with open_store(url) as store:
        await store.create(SessionRecord(session_id=f"warm-{uuid.uuid4().hex}", cwd=CWD))
        start = time.perf_counter()
        for _ in range(n):
            await store.create(SessionRecord(session_id=f"s-{uuid.uuid4().hex}", cwd=CWD))
        return n / (time.perf_counter() - start)


async def measure_low_tier(plan: dict[str, int]) -> dict[str, Any]:
    row: dict[str, Any] = {"name": "low tier (no store)"}
    async with Agent(LOW_TIER_AGENT, []) as agent:
        await agent.sessions_per_second(20)
        row["sessions_per_s"] = await best(lambda: agent.sessions_per_second(plan["sessions"]))
        sid = await agent.new_session()
        row["rt_p50_ms"], row["rt_p99_ms"] = await best(
            lambda: agent.round_trips(sid, plan["rt"]), lower=True
        )

        async def stream() -> float:
            elapsed, got = await agent.turn(sid, f"stream {plan['stream']}")
            assert got == plan["stream"], got
            return plan["stream"] / elapsed

        row["stream_msg_per_s"] = await best(stream)
    return row


# --------------------------------------------------------------------------- report


def fmt(value: Any, unit: str = "", ratio: float | None = None) -> str:
    if value is None:
        return "-"
    if unit == "s":
        text = f"{value * 1000:,.0f} ms"
    elif isinstance(value, float) and value < 10:
        text = f"{value:.3f}"
    else:
        text = f"{value:,.0f}"
    if ratio is not None:
        text += f" ({ratio:.2f}x)"
    return text


def ratio(row: dict[str, Any], base: dict[str, Any], key: str, lower: bool = False) -> float | None:
    """``row[key]`` against the reference row (inverted where lower is better)."""
    if row is base or key not in row or key not in base:
        return None
    return float(base[key] / row[key] if lower else row[key] / base[key])


def replay(row: dict[str, Any], key: str) -> str:
    updates = row.get(f"{key}_updates")
    return fmt(row.get(f"{key}_s"), "s") + ("" if updates is None else f" [{updates} upd]")


def cells(row: dict[str, Any], base: dict[str, Any]) -> list[str]:
    return [
        row["name"],
        fmt(row.get("sessions_per_s"), ratio=ratio(row, base, "sessions_per_s")),
        fmt(row.get("rt_p50_ms"), ratio=ratio(row, base, "rt_p50_ms", lower=True)),
        fmt(row.get("rt_p99_ms")),
        fmt(row.get("stream_msg_per_s"), ratio=ratio(row, base, "stream_msg_per_s")),
        fmt(row.get("replay_10k_messages_s"), "s"),
        replay(row, "replay_100k_chunks"),
        replay(row, "replay_100k_legacy"),
        fmt(row.get("two_workers_sessions_per_s")),
        fmt(row.get("store_create_per_s")),
    ]


def report(rows: list[dict[str, Any]], skipped: dict[str, str], meta: dict[str, Any]) -> str:
    base = rows[0]
    lines = [
        f"bench_store.py ({meta['plan']}) {meta['when']}, Python {meta['python']}, "
        f"{meta['cpus']} CPUs, load {meta['load_before']} -> {meta['load_after']}",
        "",
        "| agent | session/new/s | rt p50 ms | rt p99 ms | stream msg/s | replay 10k msgs "
        "| replay 100k chunks | replay 100k legacy | 2 workers new/s | store.create/s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append("| " + " | ".join(cells(row, base)) + " |")
    for name, reason in skipped.items():
        lines.append(f"| {name} | skipped: {reason} |")
    lines += ["", "Targets (issues 12 and 13): " + "; ".join(f"{a} {b}" for a, b in TARGETS)]
    lines.append("Ratios: against the low tier of this run (rt: low tier / row, lower is better).")
    lines.append(
        "Replay columns: session/load answered, every update received; [n upd] = updates replayed."
    )
    return "\n".join(lines)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small N (smoke run)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--postgres", metavar="URL", help="an existing PostgreSQL to use")
    parser.add_argument(
        "--stores", default="memory,sqlite,postgres", help="subset of memory,sqlite,postgres"
    )
    args = parser.parse_args()
    plan_name = "quick" if args.quick else "full"
    plan = PLANS[plan_name]
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # agents start from cached bytecode
    meta = {
        "plan": plan_name,
        "when": _dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_before": load_average(),
    }
    stores = Stores(args.postgres)
    rows: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    try:
        stores.start()
        log("low tier...")
        rows.append(await measure_low_tier(plan))
        for kind in args.stores.split(","):
            if kind == "postgres" and stores.skip_postgres:
                skipped[f"AgentApp + {kind}"] = stores.skip_postgres
                continue
            log(f"AgentApp + {kind}...")
            rows.append(await measure_store(kind, stores, plan))
    finally:
        stores.stop()
    meta["load_after"] = load_average()
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows, "skipped": skipped}, indent=2))
    else:
        print(report(rows, skipped, meta))
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
