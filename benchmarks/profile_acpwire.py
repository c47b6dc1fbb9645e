#!/usr/bin/env python3
"""Profile acpwire's two sides of the stdio benchmark with cProfile.

    .venv/bin/python benchmarks/profile_acpwire.py [--part stream|roundtrip|sessions] [-n N] [--top K]
        [--agent low|app|sqlite]

The client side runs in this process under cProfile; the agent runs as
``python -m cProfile -o FILE acpwire_agent.py`` (``--agent low``, the default)
or ``store_agent.py`` (the ``AgentApp`` of ``bench_high_tier.py``: ``app`` without
a store, ``sqlite`` with a SQLite file in a temp folder) and writes its profile
when the client closes it. Both are printed sorted by internal time (``--sort`` to change),
and kept as ``.prof`` files under ``--out`` (default /tmp) for snakeviz & co.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from acpwire_client import AcpwireDriver

HERE = Path(__file__).resolve().parent


async def exercise(driver: AcpwireDriver, part: str, n: int, profiler: cProfile.Profile) -> float:
    await driver.start()
    try:
        await driver.initialize()
        sid = await driver.new_session()
        for _ in range(50):
            await driver.prompt(sid, "noop")
        await driver.stream(sid, 2000)
        profiler.enable()
        t0 = time.perf_counter()
        if part == "stream":
            await driver.stream(sid, n)
        elif part == "roundtrip":
            for _ in range(n):
                await driver.prompt(sid, "noop")
        else:
            for _ in range(n):
                await driver.new_session()
        elapsed = time.perf_counter() - t0
        profiler.disable()
        return elapsed
    finally:
        await driver.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("stream", "roundtrip", "sessions"), default="stream")
    parser.add_argument("-n", type=int, default=50_000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--out", default=os.environ.get("TMPDIR", "/tmp"))
    parser.add_argument("--agent", choices=("low", "app", "sqlite"), default="low")
    args = parser.parse_args()
    client_prof = Path(args.out) / f"acpwire-client-{args.part}.prof"
    agent_prof = Path(args.out) / f"acpwire-agent-{args.agent}-{args.part}.prof"
    profiler = cProfile.Profile()
    profiled = ["-m", "cProfile", "-o", str(agent_prof)]
    with tempfile.TemporaryDirectory(prefix="acpwire-profile-") as folder:
        if args.agent == "low":
            driver = AcpwireDriver(python_args=profiled)
        else:
            store = "none" if args.agent == "app" else str(Path(folder) / "profile.sqlite3")
            driver = AcpwireDriver(
                python_args=profiled, script=HERE / "store_agent.py", args=[store]
            )
        elapsed = asyncio.run(exercise(driver, args.part, args.n, profiler))
    profiler.dump_stats(client_prof)
    print(
        f"{args.part} x {args.n}: {elapsed:.3f} s under the profiler ({args.n / elapsed:,.0f}/s)\n"
    )
    print(f"=== client side (this process), {client_prof}")
    pstats.Stats(str(client_prof)).sort_stats(args.sort).print_stats(args.top)
    print(f"=== agent side (whole agent process, start-up included), {agent_prof}")
    pstats.Stats(str(agent_prof)).sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
