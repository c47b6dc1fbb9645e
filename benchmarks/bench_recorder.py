"""What recording costs: ``python benchmarks/bench_recorder.py`` (figures in README.md).

The low tier's streaming rate (``stream N`` over real stdio pipes, as ``bench_stdio.py``
measures it for ``acpwire``) three ways, alternating for a few rounds and keeping each
one's best:

* ``direct``: the client talks to the agent, nothing recorded (the baseline);
* ``record_to``: the same, the client's transport recorded in process
  (``record_to(transport, FILE)``, redaction on);
* ``record_to, no redaction``: the same with redaction off (what redaction costs);
* ``acp record``: the client spawns ``acp record -o FILE -- AGENT`` instead of the
  agent (the stdio proxy, redaction on).

Then the viewer: ``acp view`` of a recording of ``--view-n`` messages (how long the page
takes to write, its size) and, when Debian's ``chromium`` is installed, how long a
headless chromium takes to load it and run its script (``--dump-dom``, which includes
the browser's own start and the writing out of the whole page, so the start alone is
measured too), and when the page's script had drawn the first rows (``data-ready-ms``
that the page sets on its body: milliseconds since the navigation began).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _scenario import DriverBase, load_average, stream_part
from acpwire_client import AGENT, AcpwireDriver

from acpwire.recorder import RedactionSettings, read_cassette, record_to
from acpwire.recorder.viewer import render_html
from acpwire.transports import spawn


class RecordToDriver(AcpwireDriver):
    """The acpwire driver with its transport recorded in process."""

    def __init__(self, cassette: Path, *, redact: bool = True) -> None:
        super().__init__()
        self.cassette = cassette
        self.redaction = RedactionSettings(enabled=redact)

    async def start(self) -> None:
        from acpwire.client.connection import ClientSideConnection

        transport = await spawn(self.python, [str(self.script)])
        self._pid = transport.pid
        self.conn = ClientSideConnection(
            self.client(self), record_to(transport, self.cassette, redaction=self.redaction)
        )


def proxy_driver(cassette: Path) -> AcpwireDriver:
    """The acpwire driver spawning ``acp record -o CASSETTE -- python AGENT``."""
    argv = ["-m", "acpwire.cli.main", "record", "-o", str(cassette), "--", sys.executable]
    return AcpwireDriver(python_args=argv, script=AGENT)


async def stream_rate(driver: DriverBase, plan: dict[str, Any]) -> dict[str, Any]:
    await driver.start()
    try:
        await driver.initialize()
        sid = await driver.new_session()
        for _ in range(plan["warmup"]):
            await driver.prompt(sid, "noop")
        return await stream_part(driver, sid, plan)
    finally:
        await driver.close()


async def streaming(rounds: int, plan: dict[str, Any], folder: Path) -> dict[str, Any]:
    best: dict[str, dict[str, Any]] = {}
    every: dict[str, list[float]] = {}
    for r in range(rounds):
        makers: dict[str, Callable[[int], DriverBase]] = {
            "direct": lambda _: AcpwireDriver(),
            "record_to": lambda r: RecordToDriver(folder / f"in-process-{r}.jsonl"),
            "record_to, no redaction": lambda r: RecordToDriver(
                folder / f"plain-{r}.jsonl", redact=False
            ),
            "acp record": lambda r: proxy_driver(folder / f"proxy-{r}.jsonl"),
        }
        for name, make in makers.items():
            figures = await stream_rate(make(r), plan)
            every.setdefault(name, []).append(figures["msgs_per_s"])
            if name not in best or figures["msgs_per_s"] > best[name]["msgs_per_s"]:
                best[name] = figures
            print(f"round {r + 1} {name}: {figures['msgs_per_s']:,.0f} msg/s", file=sys.stderr)
    return {"best": best, "rounds": every}


def viewer(n: int, folder: Path) -> dict[str, Any]:
    """Record a stream of ``n`` updates through ``acp record``, then view it."""
    cassette = folder / "view.jsonl"

    async def record() -> None:
        driver = proxy_driver(cassette)
        await driver.start()
        try:
            await driver.initialize()
            sid = await driver.new_session()
            await driver.stream(sid, n)
        finally:
            await driver.close()

    asyncio.run(record())
    start = time.perf_counter()
    recording = read_cassette(cassette)
    page = render_html(recording)
    written = time.perf_counter() - start
    out = folder / "view.html"
    out.write_text(page, encoding="utf-8")
    figures: dict[str, Any] = {
        "messages": len(recording.messages),
        "cassette_mb": cassette.stat().st_size / 1e6,
        "page_mb": out.stat().st_size / 1e6,
        "write_s": written,
    }
    if shutil.which("chromium"):
        blank = folder / "blank.html"
        blank.write_text("<!doctype html><title>x</title>")
        for key, page_file in (("chromium_blank_s", blank), ("chromium_load_s", out)):
            argv = ["chromium", "--headless", "--no-sandbox", f"--user-data-dir={folder / 'p'}"]
            start = time.perf_counter()
            done = subprocess.run(
                [*argv, "--dump-dom", page_file.as_uri()], capture_output=True, timeout=300
            )
            figures[key] = time.perf_counter() - start
            ready = re.search(rb'data-ready-ms="(\d+)"', done.stdout)
            if page_file == out:
                figures["ready_ms"] = int(ready[1]) if ready else None
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small N, one round")
    parser.add_argument("--view-n", type=int, default=100_000)
    parser.add_argument("--json", action="store_true", help="print every figure as JSON")
    args = parser.parse_args()
    plan = {"stream_n": 300_000, "stream_seconds": 1.0, "stream_runs": 3, "warmup": 100}
    if args.quick:
        plan = {"stream_n": 5000, "stream_seconds": 0.25, "stream_runs": 1, "warmup": 20}
        args.rounds = 1
        args.view_n = min(args.view_n, 5000)
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        stream = asyncio.run(streaming(args.rounds, plan, folder))
        view = viewer(args.view_n, folder)
    report = {"load": [load_before, load_average()], "stream": stream, "view": view}
    if args.json:
        print(json.dumps(report, indent=2))
        return
    best = stream["best"]
    base = best["direct"]["msgs_per_s"]
    print(f"load average before/after: {report['load'][0]} / {report['load'][1]}")
    print(f"{'':24} {'N':>7} {'stream msg/s':>13} {'ratio':>6} {'client µs/msg':>14}")
    for name, figures in best.items():
        print(
            f"{name:24} {figures['n']:>7} {figures['msgs_per_s']:>13,.0f} "
            f"{figures['msgs_per_s'] / base:>6.2f} {figures['client_cpu_us']:>14.1f}"
        )
    print(
        f"view: {view['messages']:,} messages, cassette {view['cassette_mb']:.1f} MB, "
        f"page {view['page_mb']:.1f} MB written in {view['write_s']:.2f} s"
    )
    if "chromium_load_s" in view:
        print(
            f"chromium: first rows drawn {view['ready_ms']} ms after navigation began; "
            f"--dump-dom took {view['chromium_load_s']:.2f} s (a blank page: "
            f"{view['chromium_blank_s']:.2f} s)"
        )


if __name__ == "__main__":
    main()
