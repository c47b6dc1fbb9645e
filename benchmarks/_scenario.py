"""The measuring loop every Python client driver shares (standard library only).

It is imported by the benchmark process itself (raw and acpwire drivers) and by
``pysdk_client.py``, which runs on the Python SDK's own virtual environment, so it
must not import acpwire, orjson or anything else outside the standard library.
``ts_client.mjs`` mirrors it line for line in JavaScript.

A *driver* talks to one agent process. It implements:

* ``await start()``: spawn the agent and connect (no ``initialize`` yet);
* ``await initialize()``, ``await new_session() -> str``;
* ``await prompt(session_id, text)``: one ``session/prompt``, returns when the
  response has arrived; every ``session/update`` it receives calls
  ``self.on_update()`` (from :class:`DriverBase`);
* ``await close()``: stop the agent.

Every benchmark agent understands two prompt texts: ``stream N`` (N
``agent_message_chunk`` updates whose text is :data:`TEXT64`, then ``end_turn``)
and anything else (``end_turn`` at once).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TEXT64 = "acp-bench " * 6 + "data"
"""The 64-byte text of every streamed chunk."""
assert len(TEXT64.encode()) == 64

CWD = os.path.abspath(os.sep)


def process_cpu_seconds(pid: int) -> float | None:
    """CPU time a process has used so far, all its threads (Linux ``/proc``; else None).

    CPU time per message moves far less with the machine's load than wall-clock
    rates do, so the benchmarks report it next to them.
    """
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            total += int((task / "schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9


class DriverBase:
    """Counts ``session/update`` notifications and lets a stream wait for them."""

    def __init__(self) -> None:
        self.updates = 0
        self._target = 0
        self._reached: asyncio.Event | None = None
        self.last_cpu: tuple[float | None, float] = (None, 0.0)
        """CPU seconds of the agent process (None if unknown) and of this thread in
        the last :meth:`stream`."""

    def agent_pid(self) -> int | None:
        """The agent process, when the driver knows it (for its CPU time)."""
        return None

    def on_update(self) -> None:
        self.updates += 1
        if self._reached is not None and self.updates >= self._target:
            self._reached.set()

    async def stream(self, session_id: str, n: int) -> tuple[float, int]:
        """Prompt ``stream n``; (seconds until the response *and* all n updates
        arrived, updates counted when the response arrived)."""
        self.updates = 0
        self._target = n
        self._reached = asyncio.Event()
        pid = self.agent_pid()
        agent_before = None if pid is None else process_cpu_seconds(pid)
        client_before = time.thread_time()
        start = time.perf_counter()
        await self.prompt(session_id, f"stream {n}")
        at_response = self.updates
        if self.updates < n:  # an implementation that may deliver updates after the response
            await asyncio.wait_for(self._reached.wait(), 60)
        elapsed = time.perf_counter() - start
        client_cpu = time.thread_time() - client_before
        agent_after = None if pid is None else process_cpu_seconds(pid)
        agent_cpu = (
            None if agent_before is None or agent_after is None else agent_after - agent_before
        )
        self.last_cpu = (agent_cpu, client_cpu)
        self._reached = None
        return elapsed, at_response

    # to be provided by a driver
    async def start(self) -> None:
        raise NotImplementedError

    async def initialize(self) -> None:
        raise NotImplementedError

    async def new_session(self) -> str:
        raise NotImplementedError

    async def prompt(self, session_id: str, text: str) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


def quantile(values: list[float], q: float) -> float:
    """Nearest-rank quantile (q in [0, 1])."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))
    return ordered[index]


def pick_stream_n(plan: dict[str, Any], rate: float) -> int:
    """N for the measured stream runs: enough for ``stream_seconds`` per run at the
    warm-up ``rate`` (rounded to 1000), at least 2000, at most ``stream_n``."""
    cap = plan["stream_n"]
    target = plan.get("stream_seconds", 0)
    if not target:
        return int(cap)
    wanted = round(rate * target / 1000) * 1000
    return int(max(min(cap, 2000), min(cap, wanted)))


async def stream_part(driver: DriverBase, sid: str, plan: dict[str, Any]) -> dict[str, Any]:
    warm_n = min(plan["stream_n"], 2000)
    warm_seconds, _ = await driver.stream(sid, warm_n)
    n = pick_stream_n(plan, warm_n / warm_seconds)
    runs = []
    for _ in range(plan.get("stream_runs", 3)):
        elapsed, at_response = await driver.stream(sid, n)
        agent_cpu, client_cpu = driver.last_cpu
        runs.append(
            {
                "seconds": elapsed,
                "at_response": at_response,
                "agent_cpu_s": agent_cpu,
                "client_cpu_s": client_cpu,
            }
        )
    seconds = [r["seconds"] for r in runs]
    agent_cpu = [r["agent_cpu_s"] for r in runs if r["agent_cpu_s"] is not None]
    return {
        "n": n,
        "runs": runs,
        "msgs_per_s": n / min(seconds),
        "msgs_per_s_median": n / statistics.median(seconds),
        "ordered": all(r["at_response"] == n for r in runs),
        # CPU per message, least of the runs (µs): what each side costs, load or not
        "agent_cpu_us": min(agent_cpu) / n * 1e6 if agent_cpu else None,
        "client_cpu_us": min(r["client_cpu_s"] for r in runs) / n * 1e6,
    }


async def run_plan(factory: Callable[[], DriverBase], plan: dict[str, Any]) -> dict[str, Any]:
    """Run the benchmark plan against agents made by ``factory``; plain-JSON figures.

    ``plan`` keys: ``stream_n`` (upper bound of N), ``stream_seconds`` (aim of one
    stream run, picks N from the warm-up rate; 0 = always ``stream_n``),
    ``stream_runs``, ``rt_n``, ``sessions_n``, ``spawn_runs`` (at least 3 are
    made; more only while ``spawn_seconds`` last), ``warmup`` (prompts before
    measuring). A part whose key is 0 or missing is skipped.
    """
    out: dict[str, Any] = {}
    driver = factory()
    await driver.start()
    try:
        await driver.initialize()
        sid = await driver.new_session()
        for _ in range(plan.get("warmup", 50)):
            await driver.prompt(sid, "noop")
        if plan.get("stream_n"):
            out["stream"] = await stream_part(driver, sid, plan)
        rt_n = plan.get("rt_n", 0)
        if rt_n:
            latencies = []
            perf = time.perf_counter
            for _ in range(rt_n):
                t0 = perf()
                await driver.prompt(sid, "noop")
                latencies.append(perf() - t0)
            out["roundtrip"] = {
                "n": rt_n,
                "p50_ms": quantile(latencies, 0.50) * 1e3,
                "p99_ms": quantile(latencies, 0.99) * 1e3,
                "mean_ms": statistics.fmean(latencies) * 1e3,
            }
        sessions_n = plan.get("sessions_n", 0)
        if sessions_n:
            t0 = time.perf_counter()
            for _ in range(sessions_n):
                await driver.new_session()
            elapsed = time.perf_counter() - t0
            out["sessions"] = {"n": sessions_n, "seconds": elapsed, "per_s": sessions_n / elapsed}
    finally:
        await driver.close()
    spawn_runs = plan.get("spawn_runs", 0)
    if spawn_runs:
        times: list[float] = []
        budget_end = time.perf_counter() + plan.get("spawn_seconds", 1e9)
        while len(times) < spawn_runs and (len(times) < 3 or time.perf_counter() < budget_end):
            d = factory()
            t0 = time.perf_counter()
            try:
                await d.start()
                await d.initialize()
                await d.new_session()
                times.append(time.perf_counter() - t0)
            finally:
                await d.close()
        out["spawn"] = {
            "runs": len(times),
            "median_ms": statistics.median(times) * 1e3,
            "min_ms": min(times) * 1e3,
            "max_ms": max(times) * 1e3,
        }
    return out


def load_average() -> str:
    """The machine's load averages (1, 5, 15 min) as ``a/b/c``: printed with every run."""
    try:
        return "/".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def git_commit() -> str | None:
    """The short commit of the benchmarked checkout, or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None
