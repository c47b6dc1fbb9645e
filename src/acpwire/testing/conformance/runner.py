"""Runs a whole check: the live runs side by side, then the wire checks, into a report."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .live import LiveChecks
from .registry import CHECKS_BY_KEY
from .report import Report, Verdicts
from .wire import Wire
from .wire_checks import judge_wire

__all__ = ["CheckOptions", "run_checks"]


@dataclass
class CheckOptions:
    """What to check and how: the agent's argv and the knobs of ``acp check``."""

    command: Sequence[str]
    prompt: str = "Hello"
    """A prompt the agent answers quickly."""
    slow_prompt: str | None = None
    """A prompt that keeps the agent busy until cancelled (cancel checks skip without it)."""
    tool_prompts: Sequence[str] = field(default_factory=tuple[str, ...])
    """Prompts that make the agent use tools, run with every capability and permissions granted."""
    only: frozenset[str] | None = None
    """Check keys to run and report (see :func:`~.registry.select_checks`); None means all."""
    timeout: float = 30.0
    """Seconds to wait for an answer that may take work (initialize, session/new, a turn)."""
    quick_timeout: float = 5.0
    """Seconds to wait for an answer that needs no work (an unknown method, bad params)."""
    grace: float = 5.0
    """Seconds allowed to end a cancelled turn, to exit after stdin closes, to connect to MCP."""
    cwd: str | None = None
    """The sessions' folder (absolute); a fresh temporary folder when None."""
    auth_method: str | None = None
    """``authenticate`` with this method id when the agent says authentication is required."""
    env: Mapping[str, str] | None = None


def _folders(cwd: str | None) -> tuple[str, str, str]:
    """(temporary folder to remove afterwards, main run's cwd, full run's cwd)."""
    temp = tempfile.mkdtemp(prefix="acp-check-")
    if cwd is not None:
        cwd = os.path.abspath(cwd)
        return temp, cwd, cwd
    base = Path(temp).resolve()
    main, full = base / "main", base / "full"
    main.mkdir()
    full.mkdir()
    return temp, str(main), str(full)


async def run_checks(options: CheckOptions) -> Report:
    """Run the checks against ``options.command``; never raises for agent misbehaviour."""
    if not options.command:
        raise ValueError("no agent command")
    started = time.monotonic()
    temp, cwd, full_cwd = _folders(options.cwd)
    try:
        verdicts = Verdicts(options.only)
        report = Report(command=list(options.command))
        wire = Wire()
        live = LiveChecks(options, verdicts, report, wire, cwd, full_cwd)
        runs = [live.main(), live.probes()]
        if any(CHECKS_BY_KEY[key].stage in ("full", "wire") for key in verdicts.selected):
            runs.append(live.full())
        await asyncio.gather(*runs)
        live.judge_probes()
        live.judge_shutdown()
        judge_wire(wire, verdicts)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    report.results = verdicts.ordered()
    report.duration = time.monotonic() - started
    return report
