"""The order of the steps of an agent check: the probes, the main run and the full run side
by side, then what can only be judged once they are all over.

Each step belongs to the group of checks it judges (:mod:`.handshake`, :mod:`.jsonrpc`,
:mod:`.sessions`, :mod:`.turns`, :mod:`.cancellation`, :mod:`.optional`, :mod:`.tools`);
this module only says when it runs. The order matters within the main run: the first
session comes before the steps that work in it, the first turn before ``session/load``
replays it, and the checks that provoke errors come before the turns, so an agent that
dies of one is started again before the turns are judged.
"""

from __future__ import annotations

import asyncio

from . import cancellation, handshake, jsonrpc, optional, sessions, tools, turns
from .driver import Run
from .live import Live

__all__ = ["run_agent_checks"]


async def run_agent_checks(live: Live) -> None:
    """Every live check of one agent, into ``live.verdicts`` (the wire checks come after)."""
    runs = [_main(live), handshake.probes(live)]
    if live.verdicts.wants_stage("full", "wire"):
        runs.append(_full(live))
    await asyncio.gather(*runs)
    handshake.judge_probes(live)
    handshake.judge_shutdown(live)
    live.finish()


async def _main(live: Live) -> None:
    run = live.new_run("main")
    try:
        await _main_steps(live, run)
    finally:
        live.report.notes.extend(run.notes)
        await run.close()


async def _main_steps(live: Live, run: Run) -> None:
    caps = await handshake.open_main(live, run)
    if caps is None:
        return
    await jsonrpc.manners(live, run)
    await sessions.unknown_session(live, run)
    session_id = await sessions.first_session(live, run)
    if session_id is None:
        return
    await jsonrpc.string_ids(live, run)
    await jsonrpc.invalid_params(live, run)
    await jsonrpc.cancel_request_quick(live, run)
    await sessions.relative_cwd(live, run)
    second = await sessions.second_session(live, run, session_id)
    if second is None:
        live.skip(optional.SESSION_OPTIONS, "no second session")
    else:
        await optional.modes(live, run, *second)
        await optional.config(live, run, *second)
    prompted = await turns.first_prompt(live, run, session_id)
    if prompted is not None:
        await turns.followups(live, run, caps)
    await cancellation.cancel(live, run)
    await cancellation.request_during_turn(live, run)
    await jsonrpc.cancel_request_turn(live, run)
    await optional.load(live, run, caps, prompted)
    await optional.session_list(live, run, caps, prompted)
    await optional.unadvertised(live, run, caps)
    if run.alive:
        await handshake.close_input(live, run, "with sessions open (main)")


async def _full(live: Live) -> None:
    run = live.new_run("full", full=True)
    listener = tools.McpListener()
    try:
        await listener.start()
        session_id = await tools.tool_turns(live, run, listener)
        if session_id is not None:
            await handshake.exit_during_turn(live, run, session_id)
    finally:
        live.report.notes.extend(run.notes)
        await run.close()
        await listener.close()
