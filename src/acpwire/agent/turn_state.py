"""A turn's lifecycle: one state, and every legal move between states in one table.

A :class:`~acpwire.agent.turn.Turn` is accepted (``PENDING``), runs its handler in
the task serving its ``session/prompt`` (``RUNNING``), is torn down (its open tool
calls failed, its terminals released) and is then answered (``FINISHED``). A
cancel (``session/cancel``, ``session/close``, ``$/cancel_request``, the connection
closing) can arrive at any point; what it does depends on the phase, and the turn
must remember it until the answer, which is then ``cancelled`` (CANCEL-004):

* before teardown it cancels the handler's task once (``CANCELLING``); a turn
  cancelled before its handler started never runs it;
* during teardown it interrupts nothing (teardown is what a cancel waits for) but
  still makes the answer ``cancelled`` (``TEARING_DOWN_CANCELLED``);
* once the turn is answered it changes nothing: the answer is decided.

So the phase and "cancel requested" are one state here, seven in all, instead of
the four booleans whose combinations the turn's methods used to decide together.
:data:`TRANSITIONS` holds every legal move; :func:`next_state` makes one and
raises :class:`TurnStateError` for any other (a handler started twice, a turn torn
down twice). Cancelling is legal in every state, so cancels never raise.

The rules a turn enforces with it: updates go out until the turn is answered and
never after (:attr:`TurnState.answered`); ``Turn.wait()`` returns once it is.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

__all__ = ["TRANSITIONS", "TurnEvent", "TurnState", "TurnStateError", "next_state"]


class TurnState(enum.Enum):
    """Where a turn is in its life; see the module docstring."""

    PENDING = "pending"
    """Accepted; its handler has not started."""
    RUNNING = "running"
    """The handler runs in the task serving the prompt."""
    CANCELLING = "cancelling"
    """Cancelled before teardown: the handler's task is being cancelled (or never starts)."""
    TEARING_DOWN = "tearing_down"
    """The handler is done; open tool calls are failed and terminals released (updates
    still go out). The answer will be the handler's stop reason."""
    TEARING_DOWN_CANCELLED = "tearing_down_cancelled"
    """Teardown of a turn whose answer will be ``cancelled``."""
    FINISHED = "finished"
    """Torn down and answered with the handler's stop reason; nothing more can be sent."""
    FINISHED_CANCELLED = "finished_cancelled"
    """Torn down and answered ``cancelled``; nothing more can be sent."""

    # Per state, read on every update a turn sends: attributes cost less than a set lookup.
    cancelled: bool
    """A cancel was requested before the answer was decided: the answer is ``cancelled``."""
    answered: bool
    """Torn down: the turn refuses to send anything (``TurnFinishedError``)."""


for _state in TurnState:
    _state.cancelled = _state in {
        TurnState.CANCELLING,
        TurnState.TEARING_DOWN_CANCELLED,
        TurnState.FINISHED_CANCELLED,
    }
    _state.answered = _state in {TurnState.FINISHED, TurnState.FINISHED_CANCELLED}


class TurnEvent(enum.Enum):
    """What moves a turn on (the :class:`~acpwire.agent.turn.Turn` method that does it)."""

    START = "start"
    """The handler starts (``run_handler``)."""
    CANCEL = "cancel"
    """A cancel arrives (``cancel``)."""
    TEAR_DOWN = "tear_down"
    """Teardown begins (``teardown``)."""
    FINISH = "finish"
    """Teardown ends, however it went (``teardown``)."""


_S, _E = TurnState, TurnEvent

TRANSITIONS: Mapping[tuple[TurnState, TurnEvent], TurnState] = {
    (_S.PENDING, _E.START): _S.RUNNING,
    (_S.PENDING, _E.CANCEL): _S.CANCELLING,
    (_S.PENDING, _E.TEAR_DOWN): _S.TEARING_DOWN,  # given up before its handler ran
    (_S.RUNNING, _E.CANCEL): _S.CANCELLING,
    (_S.RUNNING, _E.TEAR_DOWN): _S.TEARING_DOWN,
    (_S.CANCELLING, _E.CANCEL): _S.CANCELLING,
    (_S.CANCELLING, _E.TEAR_DOWN): _S.TEARING_DOWN_CANCELLED,
    (_S.TEARING_DOWN, _E.CANCEL): _S.TEARING_DOWN_CANCELLED,
    (_S.TEARING_DOWN, _E.FINISH): _S.FINISHED,
    (_S.TEARING_DOWN_CANCELLED, _E.CANCEL): _S.TEARING_DOWN_CANCELLED,
    (_S.TEARING_DOWN_CANCELLED, _E.FINISH): _S.FINISHED_CANCELLED,
    (_S.FINISHED, _E.CANCEL): _S.FINISHED,  # answered: the answer stays what it was
    (_S.FINISHED_CANCELLED, _E.CANCEL): _S.FINISHED_CANCELLED,
}
"""Every legal move: ``(state, event) -> next state``. Any pair not here is refused."""


class TurnStateError(RuntimeError):
    """A turn was asked to do what its state does not allow (start twice, tear down twice)."""


def next_state(state: TurnState, event: TurnEvent) -> TurnState:
    """The state ``event`` moves a turn in ``state`` to; :class:`TurnStateError` if illegal."""
    try:
        return TRANSITIONS[state, event]
    except KeyError:
        raise TurnStateError(
            f"a turn that is {state.value} cannot {event.value.replace('_', ' ')}"
        ) from None
