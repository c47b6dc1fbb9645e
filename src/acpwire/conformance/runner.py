"""Runs a whole check: the live runs side by side, then the wire checks, into a report.

Against an endpoint (``CheckOptions.endpoint``), the endpoint's transport and security
checks run beside the agent checks, which then reach the agent through the endpoint
(WebSocket, or Streamable HTTP with ``via="http"``). Agent checks that are about stdio
(exit on end of input, a clean stdout) are skipped with that reason.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from .._waits import within
from ..protocol.errors import ConnectionClosedError
from .agents.driver import Opener
from .agents.handshake import SHUTDOWN, SHUTDOWN_TURN
from .agents.jsonrpc import MALFORMED_LINE, MALFORMED_LINE_ERROR
from .agents.live import Live
from .agents.runs import run_agent_checks
from .agents.tools import MCP_CONNECT
from .agents.wire_checks import STDOUT_CLEAN, judge_wire
from .catalogue import checks_for
from .endpoints.http import HttpChecks
from .endpoints.security import SecurityChecks
from .endpoints.stage import Reach
from .endpoints.target import EndpointTarget, initialize_request
from .endpoints.websocket import WebSocketChecks
from .options import CheckOptions
from .registry import Stage
from .report import Report, Verdicts
from .wire import Wire

__all__ = ["CheckOptions", "run_checks"]


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


AGENT_STAGES: tuple[Stage, ...] = ("probe", "main", "full", "wire")


async def run_checks(options: CheckOptions) -> Report:
    """Run the checks against ``options.command`` or ``options.endpoint``; never raises for
    misbehaviour of what is checked."""
    if not options.command and options.endpoint is None:
        raise ValueError("no agent command and no endpoint")
    started = time.monotonic()
    temp, cwd, full_cwd = _folders(options.cwd)
    try:
        if options.endpoint is None:
            verdicts = Verdicts(checks_for("agent"), options.only)
            report = Report(command=list(options.command))
            wire = Wire()
            await run_agent_checks(Live(options, verdicts, report, wire, cwd, full_cwd))
        else:
            verdicts = Verdicts(checks_for("endpoint", "agent"), options.only)
            report = Report(command=[options.endpoint.url])
            wire = Wire()
            await _endpoint(options, options.endpoint, verdicts, report, wire, (cwd, full_cwd))
        judge_wire(wire, verdicts)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return report.completed(verdicts, started)


async def _endpoint(
    options: CheckOptions,
    target: EndpointTarget,
    verdicts: Verdicts,
    report: Report,
    wire: Wire,
    folders: tuple[str, str],
) -> None:
    cwd, full_cwd = folders
    reach = Reach()
    http = HttpChecks(options, verdicts, report, reach, cwd)
    websocket = WebSocketChecks(options, verdicts, report, reach, cwd)
    security = SecurityChecks(options, verdicts, report, reach, cwd)
    live = Live(options, verdicts, report, wire, cwd, full_cwd)
    live.opener = target.opener(timeout=options.quick_timeout)
    _skip_stdio_checks(verdicts, target)

    async def agent() -> None:
        if not verdicts.wants_stage(*AGENT_STAGES):
            return
        problem = await _reach_agent(live.opener, options.timeout)
        if problem is not None:
            reason = f"the agent could not be reached over {target.via}: {problem}"
            for stage in AGENT_STAGES:
                verdicts.skip_stage(stage, reason)
            return
        await run_agent_checks(live)

    await asyncio.gather(http.run(), websocket.run(), security.run(), agent())
    security.judge_connection_ids()


def _skip_stdio_checks(verdicts: Verdicts, target: EndpointTarget) -> None:
    """Agent checks that make no sense through an endpoint, skipped with the reason."""
    behind = "the agent is behind an endpoint"
    verdicts.record(SHUTDOWN, "skip", f"{behind}: no stdin to close (see http-delete)")
    verdicts.record(SHUTDOWN_TURN, "skip", f"{behind}: no stdin to close")
    verdicts.record(STDOUT_CLEAN, "skip", f"{behind}: no stdout (TRANS-003/004 are stdio rules)")
    if target.via == "http":
        why = "over Streamable HTTP a body that is not JSON never reaches the agent"
        verdicts.skip((MALFORMED_LINE, MALFORMED_LINE_ERROR), why)
    if not target.loopback:
        verdicts.record(
            MCP_CONNECT,
            "skip",
            f"{behind} on another machine; the stand-in MCP server listens on this one",
        )


async def _reach_agent(opener: Opener | None, timeout: float) -> str | None:
    """Why no agent answers ``initialize`` through the endpoint (None: one does)."""
    assert opener is not None
    try:
        transport = await opener()
    except ConnectionClosedError as exc:
        return str(exc)
    try:
        await transport.send(initialize_request("acp-check-reach"))
        if await within(transport.receive(), timeout) is None:
            return "the connection ended before initialize was answered"
    except ConnectionClosedError as exc:
        return str(exc)
    except asyncio.TimeoutError:
        return f"no answer to initialize within {timeout:g} s"
    finally:
        await transport.close()
    return None
