#!/usr/bin/env python3
"""ACP over real stdio pipes: acpwire against a hand-written baseline and the official SDKs.

Run from the repository root with acpwire's virtual environment:

    .venv/bin/python benchmarks/bench_stdio.py            # full run (65-80 s on 2 cores)
    .venv/bin/python benchmarks/bench_stdio.py --quick    # smoke run (~15 s)
    .venv/bin/python benchmarks/bench_stdio.py --json     # figures as JSON on stdout

In every case the agent is a child process and the client talks to it over its
stdin/stdout pipes, newline-delimited JSON-RPC. For each implementation:

(a) streaming: one prompt turn in which the agent sends N ``agent_message_chunk``
    updates of 64 bytes of text; msgs/s until the client has received all of
    them and the prompt response (best of the runs);
(b) round trip: M sequential trivial prompts (``end_turn`` at once); p50/p99;
(c) N sequential ``session/new`` calls; sessions/s;
(d) spawn to session: spawn the agent, ``initialize``, ``session/new``; median ms.

Implementations: ``raw`` (orjson + asyncio, no framework: ``raw_agent.py`` /
``raw_client.py``), ``acpwire`` (``acpwire_agent.py`` / ``acpwire_client.py``),
``pysdk`` (official Python SDK ``agent-client-protocol==0.12.1``, agent and client
on its own virtual environment ``.cache/pysdk-venv``) and ``ts`` (official
TypeScript SDK ``@agentclientprotocol/sdk@2.4.0``, agent and client on node).
The raw and acpwire clients run inside this process; the SDK clients run in a
driver process of their own runtime that does the same measurements
(``pysdk_client.py``, ``ts_client.mjs``). An implementation whose runtime is
missing is skipped with the reason. A per-message decode micro-benchmark
(acpwire's envelope parse + typed decode of a ``session/update`` line vs
``orjson.loads`` vs ``json.loads``) closes the run.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import timeit
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests" / "interop"))

from _scenario import TEXT64, git_commit, run_plan  # noqa: E402

PLANS: dict[str, dict[str, Any]] = {
    "full": {
        "warmup": 100,
        "stream_n": 300_000,
        "stream_seconds": 1.0,
        "stream_runs": 3,
        "rt_n": 2000,
        "sessions_n": 2000,
        "spawn_runs": 10,
        "spawn_seconds": 6.0,
        "rounds": 3,
    },
    "quick": {
        "warmup": 20,
        "stream_n": 5000,
        "stream_seconds": 0.25,
        "stream_runs": 2,
        "rt_n": 200,
        "sessions_n": 200,
        "spawn_runs": 3,
        "spawn_seconds": 0.0,
        "rounds": 1,
    },
}

IMPLEMENTATIONS = ("raw", "acpwire", "pysdk", "ts")
LABELS = {
    "raw": "raw orjson+asyncio (baseline)",
    "acpwire": "acpwire",
    "pysdk": "Python SDK 0.12.1",
    "ts": "TypeScript SDK 2.4.0",
}

TARGETS = {
    "stream_ratio_min": 0.5,  # acpwire msgs/s >= 0.5 x baseline
    "rt_p50_ratio_max": 2.0,  # acpwire round-trip p50 <= 2 x baseline
    "sessions_ratio_min": 0.5,  # acpwire sessions/s >= 0.5 x baseline
    "spawn_ms_max": 150.0,  # acpwire spawn to session < 150 ms
}

DRIVER_TIMEOUT = 600


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# implementations
# ---------------------------------------------------------------------------


def _run_inprocess(name: str, plan: dict[str, Any]) -> dict[str, Any]:
    if name == "raw":
        from raw_client import RawDriver as factory
    else:
        from acpwire_client import AcpwireDriver as factory  # type: ignore[assignment]
    return asyncio.run(run_plan(factory, plan))


def _run_driver(cmd: list[str], plan: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run(
        [*cmd, "--plan", json.dumps(plan)],
        capture_output=True,
        text=True,
        timeout=DRIVER_TIMEOUT,
        cwd=HERE,
        stdin=subprocess.DEVNULL,
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-8:])
        raise RuntimeError(f"driver {cmd[-1]} exited {proc.returncode}: {tail}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def availability(name: str, install: bool) -> tuple[list[str] | None, str | None]:
    """(driver argv or None for in-process, skip reason or None)."""
    if name == "raw":
        try:
            import orjson  # noqa: F401
        except ImportError:
            return None, "orjson is not installed in this python (pip install orjson)"
        return None, None
    if name == "acpwire":
        try:
            import acpwire.client.connection  # noqa: F401
        except ImportError as exc:
            return None, f"acpwire is not importable: {exc}"
        return None, None
    try:
        import sdk_install
    except ImportError as exc:  # pragma: no cover - the repository layout changed
        return None, f"tests/interop/sdk_install.py is not importable: {exc}"
    if name == "pysdk":
        if not install and not sdk_install._py_installed():
            return None, f"{sdk_install.PYSDK_VENV} has no Python SDK (run without --no-install)"
        python = sdk_install.py_sdk_python()
        if python is None:
            return None, str(sdk_install.py_sdk_skip_reason())
        return [str(python), str(HERE / "pysdk_client.py")], None
    if name == "ts":
        node = sdk_install.node_executable()
        if node is None:
            return None, "node is not installed"
        if not install and not sdk_install._ts_installed():
            return None, f"{sdk_install.TS_SDK_DIR} is not installed (run without --no-install)"
        if sdk_install.ts_sdk_dir() is None:
            return None, str(sdk_install.ts_skip_reason())
        return [node, str(HERE / "ts_client.mjs")], None
    return None, f"unknown implementation {name!r}"


def run_implementation(name: str, plan: dict[str, Any], install: bool) -> dict[str, Any]:
    cmd, reason = availability(name, install)
    if reason is not None:
        return {"skipped": reason}
    started = time.perf_counter()
    try:
        result = _run_inprocess(name, plan) if cmd is None else _run_driver(cmd, plan)
    except Exception as exc:  # one broken implementation must not lose the others
        return {"skipped": f"failed: {type(exc).__name__}: {exc}"}
    result["wall_seconds"] = time.perf_counter() - started
    return result


BEST = (
    # part, the figure that ranks the rounds, whether higher is better
    ("stream", "msgs_per_s", True),
    ("roundtrip", "p50_ms", False),
    ("sessions", "per_s", True),
    ("spawn", "median_ms", False),
)


def best_of_rounds(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One result made of each part's best round (interference from other processes
    only ever makes a figure worse); every round is kept under ``rounds``."""
    ok = [r for r in rounds if "skipped" not in r]
    if not ok:
        return rounds[-1]
    if len(ok) == 1:
        return ok[0]
    best: dict[str, Any] = {}
    for part, key, higher in BEST:
        candidates = [r[part] for r in ok if part in r]
        if candidates:
            pick = max if higher else min
            best[part] = pick(candidates, key=lambda figures, key=key: figures[key])
    best["wall_seconds"] = sum(r.get("wall_seconds", 0.0) for r in ok)
    best["rounds"] = ok
    return best


# ---------------------------------------------------------------------------
# decode micro-benchmark
# ---------------------------------------------------------------------------


def decode_microbench(seconds_each: float) -> dict[str, Any]:
    """Per-message cost of decoding one ``session/update`` line (µs, best of 5)."""
    import msgspec

    from acpwire import schema as s
    from acpwire.protocol import messages as wire

    line = wire.encode_notification(
        "session/update",
        s.SessionNotification(
            session_id="sess-0001", update=s.AgentMessageChunk(content=s.TextContent(text=TEXT64))
        ),
    )
    decoder = s.codec.decoder_for(s.SessionNotification)
    parse = wire.parse

    def acpwire_full() -> Any:
        msg = parse(line)
        return decoder(msg.params)  # type: ignore[union-attr]

    value = acpwire_full()
    assert isinstance(value.update, s.AgentMessageChunk) and value.update.content.text == TEXT64

    raw_params = parse(line).params  # type: ignore[union-attr]
    from _native_union_proto import native_decoder

    native = native_decoder()
    assert native.decode(raw_params).update.content.text == TEXT64

    cases: dict[str, Any] = {
        "acpwire: envelope + typed models": acpwire_full,
        "acpwire: envelope only (wire.parse)": lambda: parse(line),
        "acpwire: typed params only": lambda: decoder(raw_params),
        "(prototype) params, native msgspec unions": lambda: native.decode(raw_params),
        "msgspec.json.decode (untyped)": lambda: msgspec.json.decode(line),
        "json.loads": lambda: json.loads(line),
    }
    try:
        import orjson

        cases["orjson.loads"] = lambda: orjson.loads(line)
    except ImportError:
        pass
    out: dict[str, Any] = {"line_bytes": len(line), "cases": {}}
    for label, fn in cases.items():
        timer = timeit.Timer(fn)
        number, took = timer.autorange()
        number = max(1, int(number * seconds_each / max(took, 1e-9)))
        best = min(timer.repeat(repeat=5, number=number)) / number
        out["cases"][label] = {"us_per_msg": best * 1e6, "msgs_per_s": 1 / best}
    return out


# ---------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------


def _get(result: dict[str, Any], *path: str) -> float | None:
    node: Any = result
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return float(node)


FIGURES = (
    # key, path, unit/format, better
    ("stream_msgs_per_s", ("stream", "msgs_per_s"), "higher"),
    ("rt_p50_ms", ("roundtrip", "p50_ms"), "lower"),
    ("rt_p99_ms", ("roundtrip", "p99_ms"), "lower"),
    ("sessions_per_s", ("sessions", "per_s"), "higher"),
    ("spawn_median_ms", ("spawn", "median_ms"), "lower"),
)


def compute_ratios(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    base = results.get("raw", {})
    ratios: dict[str, dict[str, float | None]] = {}
    for name, result in results.items():
        if "skipped" in result or "skipped" in base:
            continue
        row: dict[str, float | None] = {}
        for key, path, _better in FIGURES:
            value, ref = _get(result, *path), _get(base, *path)
            row[key] = value / ref if value is not None and ref else None
        ratios[name] = row
    return ratios


def check_targets(
    results: dict[str, dict[str, Any]], ratios: dict[str, dict[str, float | None]]
) -> dict[str, Any]:
    acp = results.get("acpwire", {})
    r = ratios.get("acpwire", {})
    spawn = _get(acp, "spawn", "median_ms")

    def verdict(value: float | None, ok: bool) -> str:
        return "n/a" if value is None else ("met" if ok else "MISSED")

    stream, rt, sess = r.get("stream_msgs_per_s"), r.get("rt_p50_ms"), r.get("sessions_per_s")
    return {
        "streaming >= 0.5x baseline": {
            "value": stream,
            "status": verdict(stream, stream is not None and stream >= TARGETS["stream_ratio_min"]),
        },
        "round-trip p50 <= 2x baseline": {
            "value": rt,
            "status": verdict(rt, rt is not None and rt <= TARGETS["rt_p50_ratio_max"]),
        },
        "sessions/s >= 0.5x baseline": {
            "value": sess,
            "status": verdict(sess, sess is not None and sess >= TARGETS["sessions_ratio_min"]),
        },
        "spawn to session < 150 ms": {
            "value": spawn,
            "status": verdict(spawn, spawn is not None and spawn < TARGETS["spawn_ms_max"]),
        },
    }


def _fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def render(report: dict[str, Any]) -> str:
    results, ratios = report["results"], report["ratios"]
    lines = []
    meta = report["meta"]
    lines.append(
        f"ACP stdio benchmark, {meta['date']} on {meta['machine']} ({meta['cpus']} CPUs), "
        f"python {meta['python']}, node {meta['node'] or 'n/a'}, commit {meta['commit']}, "
        f"plan {meta['plan']} (raw/acpwire best of {meta['rounds']} rounds), "
        f"load avg {meta['loadavg_before']} -> {meta['loadavg_after']}"
    )
    lines.append("")
    header = (
        f"{'implementation':<31} {'stream msg/s':>13} {'N':>7} {'rt p50 ms':>10} {'rt p99 ms':>10} "
        f"{'sessions/s':>11} {'spawn ms':>9}"
    )
    lines.append(header)
    lines.append("-" * len(header))
    for name, result in results.items():
        label = LABELS.get(name, name)
        if "skipped" in result:
            lines.append(f"{label:<31} skipped: {result['skipped']}")
            continue
        n = _get(result, "stream", "n")
        order_note = "" if result.get("stream", {}).get("ordered", True) else " *"
        lines.append(
            f"{label:<31} {_fmt(_get(result, 'stream', 'msgs_per_s')) + order_note:>13} {_fmt(n):>7} "
            f"{_fmt(_get(result, 'roundtrip', 'p50_ms'), 3):>10} {_fmt(_get(result, 'roundtrip', 'p99_ms'), 3):>10} "
            f"{_fmt(_get(result, 'sessions', 'per_s')):>11} {_fmt(_get(result, 'spawn', 'median_ms'), 1):>9}"
        )
    if ratios:
        lines.append("")
        lines.append("ratio to the raw baseline measured in this run:")
        for name, row in ratios.items():
            if name == "raw":
                continue
            lines.append(
                f"{LABELS.get(name, name):<31} {_fmt_ratio(row['stream_msgs_per_s']):>13} {'':>7} "
                f"{_fmt_ratio(row['rt_p50_ms']):>10} {_fmt_ratio(row['rt_p99_ms']):>10} "
                f"{_fmt_ratio(row['sessions_per_s']):>11} {_fmt_ratio(row['spawn_median_ms']):>9}"
            )
    if any(
        not r.get("stream", {}).get("ordered", True) for r in results.values() if "skipped" not in r
    ):
        lines.append("* some updates arrived after the prompt response; timed until the last one")
    lines.append("")
    lines.append("acpwire targets:")
    for label, target in report["targets"].items():
        value = target["value"]
        shown = "-" if value is None else (f"{value:.1f} ms" if "ms" in label else f"{value:.2f}x")
        lines.append(f"  {label:<32} {shown:>10}  {target['status']}")
    decode = report.get("decode")
    if decode:
        lines.append("")
        lines.append(
            f"decode of one session/update line ({decode['line_bytes']} bytes), best of 5:"
        )
        for label, row in decode["cases"].items():
            lines.append(
                f"  {label:<42} {row['us_per_msg']:>8.2f} us/msg {row['msgs_per_s']:>12,.0f} msg/s"
            )
    return "\n".join(lines)


def _node_version() -> str | None:
    node = shutil.which("node")
    if node is None:
        return None
    try:
        return subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="small N, one round: a smoke run (about 15 s)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    parser.add_argument(
        "--impl",
        default=",".join(IMPLEMENTATIONS),
        help=f"comma-separated subset of {','.join(IMPLEMENTATIONS)} (default: all)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="rounds of raw and acpwire, best figure kept (default: 3, 1 with --quick)",
    )
    parser.add_argument(
        "--no-install", action="store_true", help="skip SDKs that are not installed yet"
    )
    parser.add_argument("--no-decode", action="store_true", help="skip the decode micro-benchmark")
    parser.add_argument(
        "--keep-dont-write-bytecode",
        action="store_true",
        help="leave PYTHONDONTWRITEBYTECODE as it is (by default it is unset for the agents, "
        "so that they start from cached .pyc files as an installed package does)",
    )
    args = parser.parse_args(argv)
    if not args.keep_dont_write_bytecode:
        # With it set, every spawned Python agent recompiles every module whose .pyc
        # is missing (acpwire from a source checkout): start-up would measure the
        # compiler, not the library. The first (unmeasured) spawn writes the caches.
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

    chosen = [name.strip() for name in args.impl.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in IMPLEMENTATIONS]
    if unknown:
        parser.error(f"unknown implementation(s): {', '.join(unknown)}")
    plan_name = "quick" if args.quick else "full"
    plan = PLANS[plan_name]
    started = time.perf_counter()
    meta: dict[str, Any] = {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": f"{platform.system()} {platform.machine()}",
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "node": _node_version(),
        "commit": git_commit(),
        "plan": plan_name,
        "loadavg_before": _loadavg(),
    }
    rounds = args.rounds if args.rounds is not None else plan["rounds"]
    meta["rounds"] = rounds
    meta["bytecode_cache"] = not args.keep_dont_write_bytecode
    # raw and acpwire (the pair the targets compare) alternate for `rounds` rounds,
    # so a burst of load elsewhere on the machine hits both alike; the SDKs run once.
    compared = [name for name in chosen if name in ("raw", "acpwire")]
    order = [name for _ in range(rounds) for name in compared]
    order += [name for name in chosen if name not in compared]
    collected: dict[str, list[dict[str, Any]]] = {name: [] for name in chosen}
    for name in order:
        log(f"[bench] {LABELS[name]} ...")
        result = run_implementation(name, plan, install=not args.no_install)
        collected[name].append(result)
        if "skipped" in result:
            log(f"[bench]   skipped: {result['skipped']}")
        else:
            log(f"[bench]   done in {result['wall_seconds']:.1f} s")
    results = {name: best_of_rounds(collected[name]) for name in chosen}
    report: dict[str, Any] = {
        "meta": meta,
        "plan": plan,
        "targets_spec": TARGETS,
        "results": results,
    }
    if not args.no_decode:
        log("[bench] decode micro-benchmark ...")
        report["decode"] = decode_microbench(0.05 if args.quick else 0.2)
    meta["loadavg_after"] = _loadavg()
    meta["wall_seconds"] = time.perf_counter() - started
    report["ratios"] = compute_ratios(results)
    report["targets"] = check_targets(results, report["ratios"])
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report))
        print(f"\n(total {meta['wall_seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
