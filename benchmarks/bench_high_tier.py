#!/usr/bin/env python3
"""The high tier against the low tier, and the low tier against the raw baseline, in one run.

Run from the repository root with acpwire's virtual environment:

    .venv/bin/python benchmarks/bench_high_tier.py             # full run (about 3 minutes)
    .venv/bin/python benchmarks/bench_high_tier.py --quick     # smoke run (about 40 s)
    .venv/bin/python benchmarks/bench_high_tier.py --json

Every agent is a child process on real stdio pipes. Rows:

* ``raw``: ``raw_agent.py`` and ``raw_client.py`` (orjson + asyncio, no framework);
* ``low tier``: ``acpwire_agent.py`` (``Agent`` + ``ClientPeer.session_update``)
  and acpwire's low-tier ``Client``;
* ``AgentApp``: ``store_agent.py none`` (``AgentApp``, ``turn.say`` per chunk,
  no store) and the same client;
* ``AgentApp + SQLite``: ``store_agent.py FILE`` (a SQLite file in a temp folder,
  history written behind);
* ``Client`` and ``ToolkitClient``: the low-tier agent's stream (the fastest
  producer here: it joins a burst of updates into few writes, where the raw
  agent writes each one, so the client is what is measured) into a low-tier
  ``Client`` that only counts, and into a
  :class:`~acpwire.client.toolkit.ToolkitClient` that folds every update into
  its :class:`~acpwire.client.state.SessionState`.

Each agent row measures what ``bench_stdio.py`` does (``_scenario.run_plan``):
streaming msg/s (best of 3 runs of about 1 s), sequential ``session/new`` per
second, spawn to first session (median), plus the CPU time per streamed
message of the agent process and of the client. Prompt round trips (p50/p99)
are measured apart, with every agent row running side by side and taking turns,
one trivial prompt each (:func:`interleaved_round_trips`): round trips are a
few hundred microseconds, so rows measured seconds apart see different loads.
The rows alternate for ``--rounds`` rounds (default 3); the table shows the
median of the rounds, and every ratio is taken within a round (rows measured
seconds apart) and then the median of those. No figure is asserted: the
targets of issue 13 are printed next to what was measured.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _scenario import CWD, DriverBase, git_commit, load_average, run_plan  # noqa: E402
from acpwire_client import AcpwireDriver  # noqa: E402
from raw_client import RawDriver  # noqa: E402

from acpwire import schema as s  # noqa: E402
from acpwire.client.connection import Client  # noqa: E402
from acpwire.client.toolkit import ToolkitClient  # noqa: E402

STORE_AGENT = HERE / "store_agent.py"

PLANS: dict[str, dict[str, Any]] = {
    "full": {
        "warmup": 100,
        "stream_n": 300_000,
        "stream_seconds": 1.0,
        "stream_runs": 3,
        "rt_n": 2000,
        "sessions_n": 2000,
        "spawn_runs": 10,
        "spawn_seconds": 4.0,
        "rounds": 3,
    },
    "quick": {
        "warmup": 20,
        "stream_n": 20_000,
        "stream_seconds": 0.25,
        "stream_runs": 2,
        "rt_n": 300,
        "sessions_n": 300,
        "spawn_runs": 3,
        "spawn_seconds": 0.0,
        "rounds": 1,
    },
}


class FoldingDriver(AcpwireDriver):
    """The low-tier agent's stream into a :class:`ToolkitClient`, which folds every update
    into the session's :class:`SessionState`; a listener of the state counts them, as a
    user interface would redraw."""

    def __init__(self) -> None:
        super().__init__(client=lambda driver: ToolkitClient())

    async def new_session(self) -> str:
        session_id = await super().new_session()
        assert self.conn is not None and isinstance(self.conn.client, ToolkitClient)
        state = self.conn.client.register_session(session_id, CWD)
        state.subscribe(lambda state, update: self.on_update() if update is not None else None)
        return session_id


class CountingClient(Client):
    def __init__(self, driver: DriverBase) -> None:
        self.driver = driver

    async def session_update(self, params: s.SessionNotification) -> None:
        self.driver.on_update()


def rows(sqlite_file: Path) -> dict[str, tuple[str, Callable[[], DriverBase], bool]]:
    """name -> (label, driver factory, agent row: whether every part is measured)."""
    return {
        "raw": ("raw orjson+asyncio pair", RawDriver, True),
        "low": ("low tier (Agent + Client)", AcpwireDriver, True),
        "app": (
            "AgentApp, no store",
            lambda: AcpwireDriver(script=STORE_AGENT, args=["none"]),
            True,
        ),
        "sqlite": (
            "AgentApp + SQLite",
            lambda: AcpwireDriver(script=STORE_AGENT, args=[str(sqlite_file)]),
            True,
        ),
        "client": (
            "low-tier agent -> Client (counts)",
            lambda: AcpwireDriver(client=CountingClient),
            False,
        ),
        "toolkit": (
            "low-tier agent -> ToolkitClient (folds)",
            FoldingDriver,
            False,
        ),
    }


# (label, row, reference row or None for an absolute figure, figure, bound, "min"/"max")
TARGETS: list[tuple[str, str, str | None, str, float, str]] = [
    ("AgentApp streaming vs low tier", "app", "low", "stream", 0.8, "min"),
    ("AgentApp + SQLite streaming vs low tier", "sqlite", "low", "stream", 0.5, "min"),
    ("AgentApp rt p50 vs low tier", "app", "low", "rt_p50", 1.3, "max"),
    ("AgentApp + SQLite session/new per s", "sqlite", None, "sessions", 2000.0, "min"),
    ("AgentApp + SQLite spawn to session ms", "sqlite", None, "spawn", 150.0, "max"),
    ("ToolkitClient vs Client streaming", "toolkit", "client", "stream", 0.8, "min"),
    ("low tier streaming vs raw", "low", "raw", "stream", 0.8, "min"),
    ("low tier rt p50 vs raw", "low", "raw", "rt_p50", 1.5, "max"),
]

FIGURES: dict[str, tuple[str, ...]] = {
    "stream": ("stream", "msgs_per_s"),
    "agent_cpu": ("stream", "agent_cpu_us"),
    "client_cpu": ("stream", "client_cpu_us"),
    "rt_p50": ("interleaved", "p50_ms"),  # (run_plan's own sequential ones stay in the JSON)
    "rt_p99": ("interleaved", "p99_ms"),
    "sessions": ("sessions", "per_s"),
    "spawn": ("spawn", "median_ms"),
}


async def interleaved_round_trips(
    factories: dict[str, Callable[[], DriverBase]], n: int
) -> dict[str, dict[str, float]]:
    """Trivial prompts to every agent in turn, one at a time, ``n`` each: p50 and p99 ms.

    The agents run side by side and take turns, so a burst of load elsewhere on
    the machine hits all of them alike (sequential parts seconds apart do not).
    """
    drivers = {name: make() for name, make in factories.items()}
    times: dict[str, list[float]] = {name: [] for name in drivers}
    sessions: dict[str, str] = {}
    try:
        for name, driver in drivers.items():
            await driver.start()
            await driver.initialize()
            sessions[name] = await driver.new_session()
            for _ in range(100):
                await driver.prompt(sessions[name], "ping")
        perf = time.perf_counter
        for _ in range(n):
            for name, driver in drivers.items():
                start = perf()
                await driver.prompt(sessions[name], "ping")
                times[name].append(perf() - start)
    finally:
        for driver in drivers.values():
            await driver.close()
    out = {}
    for name, values in times.items():
        values.sort()
        out[name] = {
            "p50_ms": values[len(values) // 2] * 1e3,
            "p99_ms": values[int(len(values) * 0.99) - 1] * 1e3,
        }
    return out


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def figure(result: dict[str, Any], name: str) -> float | None:
    node: Any = result
    for key in FIGURES[name]:
        if not isinstance(node, dict) or node.get(key) is None:
            return None
        node = node[key]
    return float(node)


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def summarize(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    names = list(rounds[0])
    table = {
        name: {fig: median([figure(r[name], fig) for r in rounds]) for fig in FIGURES}
        for name in names
    }
    targets = []
    for label, row, ref, fig, bound, kind in TARGETS:
        if row not in table or (ref is not None and ref not in table):
            continue  # a row left out with --rows
        if ref is None:
            value = table[row][fig]
        else:
            per_round = []
            for r in rounds:
                a, b = figure(r[row], fig), figure(r[ref], fig)
                per_round.append(a / b if a is not None and b else None)
            value = median(per_round)
        met = None if value is None else (value >= bound if kind == "min" else value <= bound)
        targets.append(
            {
                "target": label,
                "value": value,
                "bound": f"{'>=' if kind == 'min' else '<='} {bound:g}",
                "met": met,
            }
        )
    return {"table": table, "targets": targets}


def render(summary: dict[str, Any], labels: dict[str, str], meta: dict[str, Any]) -> str:
    def cell(value: float | None, digits: int = 0) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    lines = [
        f"bench_high_tier.py ({meta['plan']}, median of {meta['rounds']} rounds) {meta['when']}, "
        f"Python {meta['python']}, {meta['cpus']} CPUs, commit {meta['commit']}, "
        f"load {meta['load_before']} -> {meta['load_after']}",
        "",
        "| row | stream msg/s | agent CPU us/msg | client CPU us/msg | rt p50 ms | rt p99 ms "
        "| session/new/s | spawn ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, fig in summary["table"].items():
        lines.append(
            f"| {labels[name]} | {cell(fig['stream'])} | {cell(fig['agent_cpu'], 2)} "
            f"| {cell(fig['client_cpu'], 2)} | {cell(fig['rt_p50'], 3)} | {cell(fig['rt_p99'], 3)} "
            f"| {cell(fig['sessions'])} | {cell(fig['spawn'], 1)} |"
        )
    lines += ["", "| target (issue 13) | measured | bound | |", "| --- | ---: | ---: | --- |"]
    for t in summary["targets"]:
        value = t["value"]
        shown = "-" if value is None else (f"{value:,.1f}" if value > 10 else f"{value:.2f}x")
        verdict = "n/a" if t["met"] is None else ("met" if t["met"] else "**missed**")
        lines.append(f"| {t['target']} | {shown} | {t['bound']} | {verdict} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small N, one round (smoke run)")
    parser.add_argument("--json", action="store_true", help="print every round as JSON")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 3, quick 1)")
    parser.add_argument(
        "--rows", default=None, help="comma-separated subset of raw,low,app,sqlite,client,toolkit"
    )
    args = parser.parse_args()
    plan_name = "quick" if args.quick else "full"
    plan = PLANS[plan_name]
    n_rounds = args.rounds or plan["rounds"]
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # agents start from cached bytecode
    folder = Path(tempfile.mkdtemp(prefix="acpwire-bench-"))
    table = rows(folder / "bench.sqlite3")
    chosen = args.rows.split(",") if args.rows else list(table)
    meta: dict[str, Any] = {
        "plan": plan_name,
        "rounds": n_rounds,
        "when": _dt.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "commit": git_commit(),
        "load_before": load_average(),
    }
    client_plan = {k: plan[k] for k in ("warmup", "stream_n", "stream_seconds", "stream_runs")}
    rounds: list[dict[str, dict[str, Any]]] = []
    started = time.perf_counter()
    try:
        for index in range(n_rounds):
            found: dict[str, dict[str, Any]] = {}
            for name in chosen:
                label, factory, full = table[name]
                log(f"[round {index + 1}/{n_rounds}] {label} ...")
                found[name] = asyncio.run(run_plan(factory, plan if full else client_plan))
            agents = {name: table[name][1] for name in chosen if table[name][2]}
            log(f"[round {index + 1}/{n_rounds}] interleaved round trips: {', '.join(agents)} ...")
            trips = asyncio.run(interleaved_round_trips(agents, plan["rt_n"]))
            for name, figures in trips.items():
                found[name]["interleaved"] = figures
            rounds.append(found)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    meta["load_after"] = load_average()
    meta["seconds"] = round(time.perf_counter() - started)
    summary = summarize(rounds)
    if args.json:
        print(json.dumps({"meta": meta, "summary": summary, "rounds": rounds}, indent=2))
    else:
        print(render(summary, {n: table[n][0] for n in chosen}, meta))
        print(f"\n(total {meta['seconds']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
