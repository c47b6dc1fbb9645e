#!/usr/bin/env python3
"""Remote ACP: acpwire's server and client against the official TypeScript SDK's, same run.

Run from the repository root with acpwire's virtual environment:

    .venv/bin/python benchmarks/bench_remote.py            # full run (~2-3 min on 2 cores)
    .venv/bin/python benchmarks/bench_remote.py --quick    # smoke run (~30 s)
    .venv/bin/python benchmarks/bench_remote.py --json     # figures as JSON on stdout

Servers, each a process of its own on 127.0.0.1: ``acpwire`` (``_remote_server.py``:
``asgi_app`` of the benchmark agent under hypercorn; HTTP/1.1, h2c and WebSocket on
one port) and ``ts`` (``ts_remote_server.mjs``: the SDK's experimental ``AcpServer`` on
node:http with the ``ws`` package). Clients: ``acpwire`` (``connect_websocket`` /
``connect_http``, in this process) and ``ts`` (``ts_remote_client.mjs``: the SDK's
experimental WebSocket client on ``ws`` and its HTTP client on node's fetch).

Every client/server pair runs the plan of ``_scenario.py`` over each transport it
has: (a) msgs/s of one streamed turn of N 64-byte ``agent_message_chunk`` updates,
(b) p50/p99 of sequential trivial prompts, (c) sequential ``session/new`` per second.
Each pair runs ``--rounds`` times (default 3), rounds interleaved across pairs, and the
median of the rounds is shown.
The table puts acpwire's pair beside the TypeScript pair with their ratio (> 1:
acpwire faster), and the cross pairs (each client against the other's server) show
whether a gap is the client's or the server's. The TypeScript pair has no HTTP/2
row: node's fetch speaks HTTP/1.1 only, and the SDK's node adapter fails under
node:http2 (it copies the ``:method`` pseudo-header into a Fetch ``Headers``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NPM_DIR = Path(os.environ.get("ACPWIRE_NPM_DIR", ROOT / ".cache" / "npm"))
sys.path.insert(0, str(HERE))

from _scenario import run_plan  # noqa: E402
from acpwire_client import AcpwireDriver, BenchClient  # noqa: E402

from acpwire.client.connection import ClientSideConnection  # noqa: E402

PLANS: dict[str, dict[str, Any]] = {
    "full": {
        "warmup": 100,
        "stream_n": 200_000,
        "stream_seconds": 1.0,
        "stream_runs": 3,
        "rt_n": 1000,
        "sessions_n": 500,
        "rounds": 3,
    },
    "quick": {
        "warmup": 20,
        "stream_n": 5000,
        "stream_seconds": 0.25,
        "stream_runs": 2,
        "rt_n": 200,
        "sessions_n": 100,
        "rounds": 1,
    },
}
TRANSPORTS = ("websocket", "http1", "http2")
WS_VERSION = "8.23.0"


def log(message: str) -> None:
    print(f"[bench_remote] {message}", file=sys.stderr, flush=True)


# -- the acpwire client -------------------------------------------------------------------


class RemoteDriver(AcpwireDriver):
    """acpwire's client (as ``acpwire_client.py``) over WebSocket or Streamable HTTP."""

    def __init__(self, url: str, transport: str) -> None:
        super().__init__()
        self.url = url
        self.transport = transport

    async def start(self) -> None:
        if self.transport == "websocket":
            from acpwire.transports.websocket import connect_websocket

            opened: Any = await connect_websocket("ws" + self.url[4:])
        else:
            from acpwire.transports.http import connect_http

            opened = await connect_http(self.url, http2=self.transport == "http2")
        self.conn = ClientSideConnection(BenchClient(self), opened)


# -- servers and the TypeScript client ----------------------------------------------------


def ts_problem() -> str | None:
    """Why the TypeScript side cannot run, or None (installs ``ws`` on first use)."""
    node = shutil.which("node")
    if node is None:
        return "node is not installed"
    if not (NPM_DIR / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
        return f"@agentclientprotocol/sdk is not installed in {NPM_DIR} (run bin/test once)"
    if not (NPM_DIR / "node_modules" / "ws" / "package.json").is_file():
        npm = shutil.which("npm")
        if npm is None:
            return "npm is not installed, so the ws package cannot be installed"
        log(f"installing ws@{WS_VERSION} into {NPM_DIR}")
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", f"ws@{WS_VERSION}"],
            cwd=NPM_DIR,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            return f"npm install ws@{WS_VERSION} failed: {done.stderr[-300:]}"
    return None


async def start_server(command: list[str]) -> tuple[asyncio.subprocess.Process, str]:
    proc = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONPATH": _pythonpath()}
    )
    assert proc.stdout is not None
    line = (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
    if not line.startswith("URL "):
        proc.kill()
        raise RuntimeError(f"{command[-1]} did not start: {line!r}")
    return proc, line.split()[1]


def _pythonpath() -> str:
    parts = [str(HERE), str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in parts if p)


async def stop_server(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()


async def ts_client(url: str, transport: str, plan: dict[str, Any]) -> dict[str, Any]:
    kind = "ws" if transport == "websocket" else "http"
    proc = await asyncio.create_subprocess_exec(
        "node",
        str(HERE / "ts_remote_client.mjs"),
        "--url",
        url,
        "--kind",
        kind,
        "--plan",
        json.dumps(plan),
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 600)
    if proc.returncode != 0:
        raise RuntimeError(f"ts_remote_client.mjs exited {proc.returncode}")
    result: dict[str, Any] = json.loads(out)
    return result


# -- the run ------------------------------------------------------------------------------


def figures(result: dict[str, Any]) -> dict[str, float]:
    return {
        "stream": result["stream"]["msgs_per_s"],
        "rt_p50": result["roundtrip"]["p50_ms"],
        "rt_p99": result["roundtrip"]["p99_ms"],
        "sessions": result["sessions"]["per_s"],
    }


def median_of(rounds: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}


async def run(plan_name: str, rounds: int | None) -> dict[str, Any]:
    plan = dict(PLANS[plan_name])
    rounds = rounds or plan.pop("rounds")
    plan.pop("rounds", None)
    problem = ts_problem()
    servers: dict[str, tuple[asyncio.subprocess.Process, str]] = {}
    report: dict[str, Any] = {"plan": plan, "rounds": rounds, "pairs": {}, "skipped": {}}
    try:
        servers["acpwire"] = await start_server([sys.executable, str(HERE / "_remote_server.py")])
        if problem is None:
            servers["ts"] = await start_server(["node", str(HERE / "ts_remote_server.mjs")])
        else:
            report["skipped"]["ts"] = problem
            log(f"TypeScript side skipped: {problem}")
        pairs = [
            (client, server, transport)
            for transport in TRANSPORTS
            for client in ("acpwire", "ts")
            for server in ("acpwire", "ts")
        ]
        runnable: list[tuple[str, str, str]] = []
        for client, server, transport in pairs:
            name = f"{client}->{server}/{transport}"
            if "ts" in (client, server) and problem is not None:
                continue
            if transport == "http2" and "ts" in (client, server):
                why = (
                    "node's fetch has no HTTP/2"
                    if client == "ts"
                    else "the SDK's node adapter fails under node:http2"
                )
                report["skipped"][name] = why
                continue
            runnable.append((client, server, transport))
        # Rounds are interleaved (round 1 of every pair, then round 2, ...): on a shared
        # machine a burst of load from elsewhere then lands on several pairs alike, not on
        # all the rounds of one pair.
        results: dict[str, list[dict[str, float]]] = {}
        for n in range(rounds):
            for client, server, transport in runnable:
                name = f"{client}->{server}/{transport}"
                url = servers[server][1]
                log(f"{name} round {n + 1}/{rounds}")
                if client == "acpwire":
                    result = await run_plan(
                        lambda url=url, transport=transport: RemoteDriver(url, transport), plan
                    )
                else:
                    result = await ts_client(url, transport, plan)
                results.setdefault(name, []).append(figures(result))
        for name, found in results.items():
            report["pairs"][name] = {"rounds": found, "median": median_of(found)}
    finally:
        for proc, _ in servers.values():
            await stop_server(proc)
    return report


def render(report: dict[str, Any]) -> str:
    pairs = report["pairs"]
    lines = [
        f"remote ACP, median of {report['rounds']} round(s); client->server; "
        "ratio = acpwire pair / TypeScript pair (higher is better for acpwire; for "
        "latency, TypeScript / acpwire)",
        "",
        f"{'transport':<10} {'figure':<14} {'acpwire':>10} {'ts':>10} {'ratio':>7}   "
        f"{'acpwire->ts':>11} {'ts->acpwire':>11}",
    ]
    rows = [
        ("stream", "stream msg/s"),
        ("rt_p50", "rt p50 ms"),
        ("rt_p99", "rt p99 ms"),
        ("sessions", "sessions/s"),
    ]
    for transport in TRANSPORTS:
        for key, label in rows:

            def get(name: str, transport: str = transport, key: str = key) -> float | None:
                entry = pairs.get(f"{name}/{transport}")
                return None if entry is None else float(entry["median"][key])

            ours, theirs = get("acpwire->acpwire"), get("ts->ts")
            cross_a, cross_t = get("acpwire->ts"), get("ts->acpwire")
            ratio = ""
            if ours and theirs:
                value = theirs / ours if key.startswith("rt") else ours / theirs
                ratio = f"{value:.2f}x"

            def cell(v: float | None) -> str:
                if v is None:
                    return "n/a"
                return f"{v:,.0f}" if v >= 100 else f"{v:.2f}"

            lines.append(
                f"{transport:<10} {label:<14} {cell(ours):>10} {cell(theirs):>10} {ratio:>7}   "
                f"{cell(cross_a):>11} {cell(cross_t):>11}"
            )
    for name, why in report["skipped"].items():
        lines.append(f"  {name}: skipped ({why})")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small N, one round")
    parser.add_argument("--json", action="store_true", help="print the whole report as JSON")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per pair (default 3)")
    args = parser.parse_args()
    started = time.perf_counter()
    report = asyncio.run(run("quick" if args.quick else "full", args.rounds))
    report["seconds"] = time.perf_counter() - started
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report))
    log(f"done in {report['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
