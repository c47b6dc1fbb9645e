"""The corpus of agents ``acp check`` is measured on, and a runner that checks them all at once.

``broken/*.py`` each plant one defect in the correct agent ``broken/_agent.py`` and say
which checks must fail with which requirement ids (a literal ``FAILS`` dict);
``correct/*.py`` behave in unusual but allowed ways and declare ``FAILS = {}``. A file may
also declare ``EXIT`` (the exit status, when not 0 or 1) and ``OPTIONS`` (extra
:class:`CheckOptions` fields). Checking an agent takes a few seconds, mostly waiting, so
the whole corpus runs concurrently on one event loop in a background thread, and each test
waits for its own agent's report.
"""

from __future__ import annotations

import ast
import asyncio
import logging
import sys
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from acpwire.conformance import CheckOptions, Report, run_checks

HERE = Path(__file__).resolve().parent
BROKEN = sorted(p for p in (HERE / "broken").glob("*.py") if not p.name.startswith("_"))
CORRECT = sorted(p for p in (HERE / "correct").glob("*.py") if not p.name.startswith("_"))
BASE = HERE / "broken" / "_agent.py"
Job = Callable[[], Awaitable[Report]]
CONCURRENCY = 8
"""Agents checked at once: the checks mostly wait (0.5 s watches, timeouts, grace periods)."""
TEST_OPTIONS: dict[str, Any] = {
    "slow_prompt": "slow",
    "tool_prompts": ("tools",),
    "timeout": 10.0,
    "quick_timeout": 5.0,
    "grace": 2.0,
}
"""Short timeouts: every corpus agent answers within milliseconds unless it is broken."""


def declared(path: Path, name: str, default: Any) -> Any:
    """The literal value assigned to ``name`` at the top level of ``path``."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return ast.literal_eval(value)
    return default


def expected_failures(path: Path) -> dict[str, tuple[str, ...]]:
    fails: dict[str, tuple[str, ...]] = declared(path, "FAILS", None)
    assert fails is not None, f"{path.name} declares no FAILS"
    return fails


def failures(report: Report) -> dict[str, tuple[str, ...]]:
    """Failed checks and the requirement ids each broke."""
    return {r.check.key: r.broken for r in report.results if r.status == "fail"}


def options_for(path: Path) -> CheckOptions:
    extra: dict[str, Any] = declared(path, "OPTIONS", {})
    return CheckOptions(command=[sys.executable, str(path)], **{**TEST_OPTIONS, **extra})


class Corpus:
    """Checks many agents in a background event loop, a few at a time; reports on demand.

    ``jobs`` maps a key to the options of its run (for a corpus file: :func:`options_for`),
    or to a :data:`Job` that makes its own report (to serve an endpoint around the run).
    """

    def __init__(self, jobs: dict[Any, CheckOptions | Job], concurrency: int = CONCURRENCY) -> None:
        self.jobs = jobs
        self.concurrency = concurrency
        self.futures: dict[Any, Future[Report]] = {key: Future() for key in jobs}
        self.thread = threading.Thread(target=self._main, name="acp-check-corpus", daemon=True)

    @classmethod
    def of(cls, paths: list[Path]) -> Corpus:
        return cls({p: options_for(p) for p in paths})

    def start(self) -> None:
        self.thread.start()

    def _main(self) -> None:
        logging.getLogger("acpwire").addHandler(logging.NullHandler())
        asyncio.run(self._all())

    async def _all(self) -> None:
        gate = asyncio.Semaphore(self.concurrency)

        async def one(key: Any, future: Future[Report]) -> None:
            async with gate:
                job = self.jobs[key]
                try:
                    report = await (run_checks(job) if isinstance(job, CheckOptions) else job())
                    future.set_result(report)
                except BaseException as exc:  # handed to the test that waits for it
                    future.set_exception(exc)

        await asyncio.gather(*(one(k, f) for k, f in self.futures.items()))

    def report(self, key: Any, timeout: float = 300.0) -> Report:
        return self.futures[key].result(timeout)

    def join(self) -> None:
        self.thread.join(timeout=60)
