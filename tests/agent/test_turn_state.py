"""A turn's lifecycle table (acpwire.agent.turn_state), enumerated.

Every (state, event) pair is either in the table or refused with ``TurnStateError``;
every move in the table is made by a real turn of an AgentApp, driven from a client
over the wire (prompt, ``session/cancel``, ``session/close``) and from the handler's
public API, and each scenario checks what the client sees (CANCEL-004: a cancel
before the answer, even during teardown, makes it ``cancelled``)."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
from _app_harness import TestClient, Wired, wired
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.agent import turn as turn_module
from acpwire.agent.app import AgentApp, Turn
from acpwire.agent.turn import TurnFinishedError
from acpwire.agent.turn_state import (
    TRANSITIONS,
    TurnEvent,
    TurnState,
    TurnStateError,
    next_state,
)
from acpwire.protocol.errors import ErrorCode, RequestError
from acpwire.store.base import SessionRecord
from acpwire.store.memory import MemorySessionStore
from acpwire.testing import SchemaValidator

S = TurnState
Move = tuple[TurnState, TurnEvent]


def test_every_pair_is_in_the_table_or_refused() -> None:
    for state, event in itertools.product(TurnState, TurnEvent):
        if (state, event) in TRANSITIONS:
            assert next_state(state, event) is TRANSITIONS[state, event]
        else:
            with pytest.raises(TurnStateError, match=state.value):
                next_state(state, event)


def test_a_cancel_is_legal_everywhere_and_only_teardown_answers() -> None:
    assert all((state, TurnEvent.CANCEL) in TRANSITIONS for state in TurnState)
    for (state, event), after in TRANSITIONS.items():
        assert after.answered == (event is TurnEvent.FINISH or state.answered), (state, event)
        # Once requested, cancellation is remembered until the answer (and after it).
        assert after.cancelled >= state.cancelled, (state, event)


@pytest.fixture
def moves(monkeypatch: pytest.MonkeyPatch) -> list[Move]:
    """Every move any turn makes during the test, in order (Turn moves only through
    ``next_state``)."""
    made: list[Move] = []

    def recording(state: TurnState, event: TurnEvent) -> TurnState:
        after = next_state(state, event)  # (illegal moves raise and are not made)
        made.append((state, event))
        return after

    monkeypatch.setattr(turn_module, "next_state", recording)
    return made


E = TurnEvent
RUNS = [(S.PENDING, E.START), (S.RUNNING, E.TEAR_DOWN), (S.TEARING_DOWN, E.FINISH)]
CANCELLED_RUNNING = [
    (S.PENDING, E.START),
    (S.RUNNING, E.CANCEL),
    (S.CANCELLING, E.CANCEL),
    (S.CANCELLING, E.TEAR_DOWN),
    (S.TEARING_DOWN_CANCELLED, E.FINISH),
]
CANCELLED_IN_TEARDOWN = [
    (S.PENDING, E.START),
    (S.RUNNING, E.TEAR_DOWN),
    (S.TEARING_DOWN, E.CANCEL),
    (S.TEARING_DOWN_CANCELLED, E.CANCEL),
    (S.TEARING_DOWN_CANCELLED, E.FINISH),
]
CANCELLED_PENDING = [
    (S.PENDING, E.CANCEL),
    (S.CANCELLING, E.TEAR_DOWN),
    (S.TEARING_DOWN_CANCELLED, E.FINISH),
]
GIVEN_UP = [(S.PENDING, E.TEAR_DOWN), (S.TEARING_DOWN, E.FINISH)]
"""The moves each scenario below makes, exactly."""


def test_the_scenarios_make_every_move_of_the_table() -> None:
    scenarios = [
        *RUNS,
        (S.FINISHED, E.CANCEL),
        *CANCELLED_RUNNING,
        (S.FINISHED_CANCELLED, E.CANCEL),
        *CANCELLED_IN_TEARDOWN,
        *CANCELLED_PENDING,
        *GIVEN_UP,
    ]
    assert set(scenarios) == set(TRANSITIONS)


async def until_cancelled(w: Wired, session_id: str) -> Turn:
    """The session's turn, once a cancel sent to it has reached it (notifications are
    handled on their own loop: no round trip orders them against this test)."""
    turn = w.agent_conn.agent.turns[session_id]  # type: ignore[attr-defined]
    assert isinstance(turn, Turn)
    await wait_until(lambda: turn.cancelled, "the cancel reaches the turn")
    return turn


class HeldStore(MemorySessionStore):
    """A store whose next ``update`` waits for the test (and may then fail)."""

    def __init__(self) -> None:
        super().__init__()
        self.hold: asyncio.Future[None] | None = None
        self.holding = asyncio.Event()

    def arm(self) -> asyncio.Future[None]:
        self.hold = asyncio.get_running_loop().create_future()
        return self.hold

    async def update(self, record: SessionRecord, *, touch: bool = True) -> SessionRecord:
        hold, self.hold = self.hold, None
        if hold is not None:
            self.holding.set()
            await hold
        return await super().update(record, touch=touch)


async def test_a_turn_runs_tears_down_and_is_answered(
    moves: list[Move], schema_validator: SchemaValidator
) -> None:
    app = AgentApp("t", auto_title=False)
    seen: list[Turn] = []

    @app.prompt
    async def handle(turn: Turn) -> None:
        seen.append(turn)
        assert turn.state is S.RUNNING
        await turn.say("hello")
        with pytest.raises(TurnStateError):  # a handler cannot be started twice
            await turn.run_handler(handle)

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        assert (await w.agent.prompt(sid, "go")).stop_reason == "end_turn"
        [turn] = seen
        assert turn.state is S.FINISHED
        turn.cancel()  # a cancel after the answer changes nothing
        assert (turn.state, turn.cancelled) == (S.FINISHED, False)
        with pytest.raises(TurnStateError):  # nor can it be torn down twice
            await turn.teardown()
        with pytest.raises(TurnFinishedError):
            await turn.say("late")
        await turn.wait()  # returns at once
    assert moves == [*RUNS, (S.FINISHED, E.CANCEL)]


async def test_a_cancel_while_the_handler_runs_cancels_it_once(
    moves: list[Move], schema_validator: SchemaValidator
) -> None:
    app = AgentApp("t", auto_title=False)
    started = asyncio.Event()
    states: list[TurnState] = []
    seen: list[Turn] = []

    @app.prompt
    async def handle(turn: Turn) -> None:
        seen.append(turn)
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            states.append(turn.state)
            turn.cancel()  # again: the task is not cancelled a second time
            await turn.say("cleaning up")  # updates still go out before the answer
            states.append(turn.state)
            raise

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "go"))
        await asyncio.wait_for(started.wait(), TIMEOUT)
        await w.agent.cancel(sid)
        assert (await asyncio.wait_for(prompt, TIMEOUT)).stop_reason == "cancelled"
        assert w.client.texts(sid) == ["cleaning up"]
        seen[0].cancel()
    assert states == [S.CANCELLING, S.CANCELLING]
    assert moves == [*CANCELLED_RUNNING, (S.FINISHED_CANCELLED, E.CANCEL)]


class CancelsDuringTeardown(TestClient):
    """Sends ``session/cancel`` twice while the agent kills a terminal in teardown."""

    __test__ = False

    def __init__(self) -> None:
        super().__init__()
        self.turns: list[Turn] = []
        self.states: list[TurnState] = []

    async def kill_terminal(self, params: s.KillTerminalRequest) -> s.KillTerminalResponse:
        self.states.append(self.turns[0].state)
        await self.agent.cancel(params.session_id)
        await self.agent.cancel(params.session_id)
        return await super().kill_terminal(params)


async def test_a_cancel_during_teardown_interrupts_nothing_but_answers_cancelled(
    moves: list[Move], schema_validator: SchemaValidator, tmp_path: Path
) -> None:
    """The handler returned; teardown kills the terminal it left open; a session/cancel
    arriving meanwhile makes the answer ``cancelled`` (CANCEL-004)."""
    app = AgentApp("t", auto_title=False)
    client = CancelsDuringTeardown()

    @app.prompt
    async def handle(turn: Turn) -> None:
        client.turns.append(turn)
        await turn.open_terminal("sleep", ["30"])  # left for teardown to kill and release

    async with wired(app, client, schema_validator) as w:
        sid = await w.new_session(str(tmp_path))
        assert (await w.agent.prompt(sid, "go")).stop_reason == "cancelled"
        # (the response resolves after the notifications sent before it were handled)
        assert client.turns[0].state is S.FINISHED_CANCELLED
    assert client.states == [S.TEARING_DOWN]
    assert moves == CANCELLED_IN_TEARDOWN


async def test_a_turn_cancelled_before_its_handler_starts_never_runs_it(
    moves: list[Move], schema_validator: SchemaValidator
) -> None:
    """The cancel lands while the turn is being set up (its title being stored)."""
    store = HeldStore()
    app = AgentApp("t", store=store)
    ran: list[Turn] = []

    @app.prompt
    async def handle(turn: Turn) -> None:
        ran.append(turn)

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        hold = store.arm()
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "a title"))
        await asyncio.wait_for(store.holding.wait(), TIMEOUT)
        await w.agent.cancel(sid)
        assert (await until_cancelled(w, sid)).state is S.CANCELLING
        hold.set_result(None)
        assert (await asyncio.wait_for(prompt, TIMEOUT)).stop_reason == "cancelled"
    assert ran == []
    assert moves == CANCELLED_PENDING


async def test_a_turn_given_up_before_its_handler_ran_is_still_torn_down(
    moves: list[Move], schema_validator: SchemaValidator
) -> None:
    """Setting the turn up failed (the store refused its title) after a session/close
    asked to end it: the prompt answers an error and the close is answered, instead
    of waiting forever for a teardown that never came."""
    store = HeldStore()
    app = AgentApp("t", store=store)

    @app.prompt
    async def handle(turn: Turn) -> None:
        raise AssertionError("never runs")

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        hold = store.arm()
        prompt = asyncio.ensure_future(w.agent.prompt(sid, "a title"))
        await asyncio.wait_for(store.holding.wait(), TIMEOUT)
        close = asyncio.ensure_future(w.agent.close_session(sid))
        await until_cancelled(w, sid)
        hold.set_exception(OSError("disk full"))
        with pytest.raises(RequestError) as caught:
            await asyncio.wait_for(prompt, TIMEOUT)
        assert caught.value.code == ErrorCode.INTERNAL_ERROR
        await asyncio.wait_for(close, TIMEOUT)
    assert moves == CANCELLED_PENDING


async def test_a_turn_without_a_handler_goes_from_pending_to_teardown(
    moves: list[Move], schema_validator: SchemaValidator
) -> None:
    app = AgentApp("t", auto_title=False)  # no @app.prompt
    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        with pytest.raises(RequestError) as caught:
            await w.agent.prompt(sid, "go")
        assert caught.value.code == ErrorCode.METHOD_NOT_FOUND
    assert moves == GIVEN_UP
