"""Runs ``acp check --client``: the baseline, then every scenario side by side, then the
checks over the whole recording, into a :class:`~..report.Report`.

Each scenario gets a private folder (``work``, the client's working directory and so
its session folder, with a few files, a ``.git`` folder and links to ``outside``, a
sibling that holds a secret file), a fresh client process and its own scripted agent.
The run's folder is created 0700 and removed at the end; the control socket lives in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..._waits import within
from ..catalogue import checks_for
from ..report import Report, Verdicts
from ..wire import Wire
from . import hostile, manners, tools
from .driver import ClientProcess, ControlServer, client_argv, scripted_agent_command
from .manners import BASELINE
from .scene import (
    SECRET_VARIABLE,
    Baseline,
    ClientCheckOptions,
    Scenario,
    Scene,
    make_folder,
    new_secret,
    unmet_need,
)
from .wire_checks import judge_client_wire

__all__ = ["SCENARIOS", "ClientCheckOptions", "run_client_checks"]

SCENARIOS: tuple[Scenario, ...] = (
    *manners.PLAYS.scenarios,
    *hostile.PLAYS.scenarios,
    *tools.PLAYS.scenarios,
)
"""Every scenario, the baseline first, in the order they are started."""

_SCENARIO_LIMIT_FACTOR = 4
"""A scenario is stopped after this many ``timeout`` plus ``grace`` seconds: each step is
bounded already; this bounds a script as a whole, whatever the client does."""


async def run_client_checks(options: ClientCheckOptions, wire: Wire | None = None) -> Report:
    """Check the client ``options.command``; never raises for the client's misbehaviour.

    Every line of every scenario is recorded on ``wire`` (a fresh one when None; pass
    one to read the recording afterwards). Raises ``ValueError`` for a command without
    the ``{agent}`` placeholder.
    """
    client_argv(options.command, ["agent"], options.prompt, "/")  # placeholders valid?
    started = time.monotonic()
    temp = _private_folder()
    report = Report(command=[options.command], target="client")
    verdicts = Verdicts(checks_for("client"), options.only)
    wire = Wire() if wire is None else wire
    try:
        await _Run(options, verdicts, report, wire, temp).run()
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return report.completed(verdicts, started)


def _private_folder() -> Path:
    """A fresh folder only this user can enter (``mkdtemp`` makes it 0700), links resolved.

    In ``/tmp`` when the usual temporary folder's path is too long for the control
    socket's (a Unix socket path has about 100 bytes).
    """
    folder = Path(tempfile.mkdtemp(prefix="acp-check-")).resolve()
    if len(os.fsencode(folder)) > _LONGEST_FOLDER and os.path.isdir("/tmp"):
        os.rmdir(folder)
        folder = Path(tempfile.mkdtemp(prefix="acp-check-", dir="/tmp")).resolve()
    return folder


_LONGEST_FOLDER = 80
"""Bytes of the run folder's path that leave room for ``/control.sock``."""


@dataclass
class _Run:
    options: ClientCheckOptions
    v: Verdicts
    report: Report
    wire: Wire
    temp: Path
    baseline: Baseline = field(default_factory=Baseline)
    server: ControlServer = field(init=False)
    env: dict[str, str] = field(init=False)
    """The client's environment, with a secret terminals must not see."""

    def __post_init__(self) -> None:
        self.server = ControlServer(str(self.temp))
        base = dict(self.options.env) if self.options.env is not None else dict(os.environ)
        self.env = {**base, SECRET_VARIABLE: new_secret()}

    async def run(self) -> None:
        await self.server.start()
        try:
            await self.play(BASELINE)
            if not self.baseline.started or not self.baseline.prompted:
                self.report.blocked = self.baseline.problem
            if self.baseline.started:
                gate = asyncio.Semaphore(max(1, self.options.concurrency))

                async def one(scenario: Scenario) -> None:
                    async with gate:
                        await self.play(scenario)

                await asyncio.gather(*(one(s) for s in SCENARIOS[1:] if self.runnable(s)))
            else:
                self.v.skip(self.v.checks, self.baseline.problem)
            judge_client_wire(self.wire, self.server.agents, self.v, self.options.quick_timeout)
        finally:
            await self.server.close()
        if self.server.extra:
            self.report.notes.append(
                "the client started the agent more than once in: "
                + ", ".join(sorted(set(self.server.extra)))
                + " (the first one was played)"
            )

    def runnable(self, scenario: Scenario) -> bool:
        """Whether ``scenario`` has a selected check the baseline says it can judge."""
        base = self.baseline
        wanted = False
        for check in scenario.checks:
            if check.key not in self.v.selected:
                continue
            unmet = unmet_need(
                check,
                base.capabilities,
                prompted=base.prompted,
                in_workspace=base.in_workspace,
                prompt_detail=base.problem,
            )
            if unmet is None:
                wanted = True
            else:
                self.v.record(check, *unmet)
        return wanted

    async def play(self, scenario: Scenario) -> None:
        options = self.options
        folder = self.temp / scenario.name
        make_folder(folder)
        agent = self.server.expect(scenario.name, self.wire)
        argv = client_argv(
            options.command,
            scripted_agent_command(self.server.path, scenario.name),
            options.prompt,
            str(folder / "work"),
        )
        client = ClientProcess(argv, str(folder / "work"), self.env)
        scene = Scene(scenario, options, self.v, agent, client, folder, self.baseline)
        problem = await client.start()
        try:
            if problem is None:
                problem = await self._connected(scene)
            if problem is not None:
                if scenario is BASELINE:
                    self.baseline.problem = problem
                scene.skip_rest(problem)
                return
            if scenario is BASELINE:
                self.baseline.started = True
            limit = _SCENARIO_LIMIT_FACTOR * (options.timeout + options.grace)
            try:
                await within(scenario.script(scene), limit)
            except asyncio.TimeoutError:
                scene.skip_rest(f"the scenario did not finish within {limit:g} s")
            if scenario is BASELINE and scene.initialize is not None:
                params = scene.initialize.params
                info = params.get("clientInfo")
                self.report.agent_info = info if isinstance(info, dict) else None
                self.report.protocol_version = params.get("protocolVersion")
        finally:
            await client.stop()
            agent.release()

    async def _connected(self, scene: Scene) -> str | None:
        """None once the client started the agent; else why it did not."""
        connected = asyncio.ensure_future(scene.agent.connected.wait())
        exited = asyncio.ensure_future(scene.client.wait(self.options.timeout))
        try:
            await asyncio.wait({connected, exited}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (connected, exited):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if scene.agent.connected.is_set():
            return None
        output = " ".join(scene.client.output().split())
        said = f"; it printed: {output[-300:]}" if output else ""
        if scene.client.returncode is not None:
            return f"the client did not start the agent: {scene.client.describe_end()}{said}"
        return f"the client did not start the agent within {self.options.timeout:g} s{said}"
