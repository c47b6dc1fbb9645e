"""A remote connection's lifecycle (server/lifecycle.py): one state, changed only along its
table of moves. The paths through it are enumerated here; what each means on the wire
(a dropped socket kept for a resume, a failure's broken end) is tested over real sockets in
test_resume.py and test_broken.py."""

from __future__ import annotations

import asyncio
import contextlib
import itertools

import pytest
from waiting import TIMEOUT

from acpwire.server.lifecycle import FAILURES, MOVES, Lifecycle, State


async def _never() -> None:
    raise AssertionError("a timer ran that should not have started")


def test_every_state_has_its_moves_and_ended_is_the_only_end() -> None:
    assert set(MOVES) == set(State)
    assert [state for state, moves in MOVES.items() if not moves] == [State.ENDED]


@pytest.mark.parametrize(("start", "to"), list(itertools.product(State, State)))
async def test_only_the_moves_in_the_table_are_made(start: State, to: State) -> None:
    life = Lifecycle()
    life.state = start
    if to in MOVES[start]:
        life.move(to)
        assert life.state is to
    else:
        with pytest.raises(RuntimeError, match="cannot go from"):
            life.move(to)
        assert life.state is start


async def test_a_lingering_connection_that_is_resumed_does_not_end() -> None:
    life = Lifecycle()
    ended = asyncio.Event()

    async def end() -> None:
        ended.set()

    before = asyncio.all_tasks()
    assert life.linger(0.0, end)
    assert life.state is State.LINGERING
    assert not life.linger(0.0, end), "a second linger starts no second timer"
    (timer,) = asyncio.all_tasks() - before
    life.resume()
    assert life.state is State.OPEN
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(timer, TIMEOUT)
    assert timer.cancelled() and not ended.is_set()


async def test_a_lingering_connection_not_resumed_ends_by_itself() -> None:
    life = Lifecycle()

    async def end() -> None:
        assert life.begin_end("client gone")  # from within the timer: not cancelled by it
        life.finish()

    life.linger(0.0, end)
    await asyncio.wait_for(life.closed.wait(), TIMEOUT)
    assert life.state is State.ENDED
    assert life.end_reason == "client gone" and not life.failed


async def test_teardown_begins_once_and_keeps_the_first_reason() -> None:
    life = Lifecycle()
    assert life.begin_end("agent ended")
    assert life.ending and life.failed
    assert not life.begin_end("closed")
    assert life.end_reason == "agent ended"
    assert not life.linger(60.0, _never), "an ending connection does not linger"
    life.resume()  # a resume that comes too late changes nothing
    assert life.state is State.ENDING
    life.finish()
    assert life.closed.is_set() and life.ending


def test_only_the_agents_failures_are_failures() -> None:
    assert {"agent ended", "agent stalled"} == FAILURES
