"""The recorded client, driving a real agent: ``acp replay FILE --as-client -- AGENT``
(and the first half of ``acp verify``).

The client's requests and notifications are sent in their recorded order, each once
what preceded it in the recording has happened live: the answers to earlier requests
that came before it, and as many agent messages as were recorded before it (or, if
the agent says less, once it has been quiet for ``settle`` seconds). The agent's own
requests are matched to the recorded ones (:func:`~.replay_agent.best_match`) and
answered as the client answered then. Ids the agent makes up (sessions, tool calls,
terminals) are bound to the recorded ones as they appear (:class:`~.matching.Bindings`),
so a later ``session/prompt`` names the live session; ``cwd`` moves the recorded
workspace to another folder.

The result, :class:`LiveRun`, is everything the agent said, each answer tied to the
recorded request it answers, for :mod:`.verify` to compare.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import msgspec

from .._waits import within
from ..protocol.framing import Oversize
from ..transports.base import Transport
from .conversation import Conversation, Kind, Step, message_kind
from .matching import Bindings
from .replay_agent import NOT_RECORDED, ReplayReport, best_match

__all__ = ["SETTLE", "LiveMessage", "LiveRun", "ReplayClient"]

SETTLE = 0.5
"""Seconds of silence after which an agent that said less than recorded is taken to
have finished saying it (the replay then goes on, and verify reports what is missing)."""


@dataclass
class LiveMessage:
    """One message the live agent sent."""

    msg: dict[str, Any]
    kind: Kind
    method: str | None
    """The method; for an answer, the method of the request it answers."""
    answers: int | None = None
    """An answer: the recorded index of the client request it answers."""
    matched: int | None = None
    """A request of the agent: the recorded agent request it was matched to."""
    t: float = 0.0


@dataclass
class LiveRun:
    messages: list[LiveMessage] = field(default_factory=list[LiveMessage])
    bindings: Bindings = field(default_factory=Bindings)
    report: ReplayReport = field(default_factory=ReplayReport)


class ReplayClient:
    """Plays the client side of a recorded conversation (see the module docstring)."""

    def __init__(
        self,
        conversation: Conversation,
        *,
        cwd: str | None = None,
        settle: float = SETTLE,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.conversation = conversation
        self.settle = settle
        self.log = log or (lambda text: None)
        self.run_ = LiveRun()
        recorded_cwd = conversation.cwd
        if cwd is not None and recorded_cwd is not None:
            self.run_.bindings.bind_path(recorded_cwd, cwd)
        self._pending: dict[str, tuple[int, asyncio.Future[None]]] = {}
        self._answered: dict[int, asyncio.Future[None]] = {}
        self._used: set[int] = set()
        self._progress = asyncio.Event()
        self._agent_requests: dict[str, list[Step]] = {}
        for step in conversation.of("agent"):
            if step.kind == "request" and step.method is not None:
                self._agent_requests.setdefault(step.method, []).append(step)
        self._started = time.monotonic()

    async def run(self, transport: Transport) -> LiveRun:
        """Play the recorded client side over ``transport``; closes it at the end."""
        reader = asyncio.ensure_future(self._read(transport))
        try:
            steps = self.conversation.steps
            for step in steps:
                if step.sender != "client" or step.kind == "response":
                    continue
                await self._after_what_preceded(step)
                if reader.done():
                    break
                await self._send_step(transport, step)
            pending = [f for _, f in self._pending.values()]
            if pending:
                await asyncio.wait([reader, *pending], return_when=asyncio.FIRST_COMPLETED)
                if not reader.done():
                    await asyncio.wait(pending)
            await self._settle(len(self.conversation.of("agent")))
        finally:
            reader.cancel()  # what the agent says after it settled is not waited for
            await asyncio.wait([reader])
            with contextlib.suppress(Exception):
                await transport.close()
        return self.run_

    async def _after_what_preceded(self, step: Step) -> None:
        steps = self.conversation.steps
        for earlier in steps[: step.index]:
            if (
                earlier.sender == "client"
                and earlier.kind == "request"
                and earlier.answer is not None
                and earlier.answer < step.index
            ):
                future = self._answered.get(earlier.index)
                if future is not None:
                    await future
        await self._settle(sum(1 for s in steps[: step.index] if s.sender == "agent"))

    async def _settle(self, needed: int) -> None:
        """Wait until the agent said ``needed`` messages, or was quiet ``settle`` seconds."""
        while len(self.run_.messages) < needed:
            self._progress.clear()
            try:
                await within(self._progress.wait(), self.settle)
            except asyncio.TimeoutError:
                return

    async def _send_step(self, transport: Transport, step: Step) -> None:
        out = cast("dict[str, Any]", self.run_.bindings.to_live(step.msg))
        if step.kind == "request":
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._pending[repr(out.get("id"))] = (step.index, future)
            self._answered[step.index] = future
        await transport.send(msgspec.json.encode(out))

    async def _read(self, transport: Transport) -> None:
        try:
            while True:
                raw = await transport.receive()
                if raw is None:
                    break
                if isinstance(raw, Oversize):
                    continue
                try:
                    msg = msgspec.json.decode(raw)
                except msgspec.DecodeError:
                    continue
                if isinstance(msg, dict):
                    await self._take(transport, cast("dict[str, Any]", msg))
        finally:
            # Nothing more will be answered: let the player finish.
            for _, future in self._pending.values():
                if not future.done():
                    future.set_result(None)
            self._progress.set()

    async def _take(self, transport: Transport, msg: dict[str, Any]) -> None:
        kind = message_kind(msg)
        method = msg.get("method")
        live = LiveMessage(
            msg,
            kind,
            method if isinstance(method, str) else None,
            t=time.monotonic() - self._started,
        )
        bindings = self.run_.bindings
        if kind == "response":
            found = self._pending.pop(repr(msg.get("id")), None)
            if found is not None:
                index, future = found
                live.answers = index
                live.method = self.conversation.steps[index].method
                recorded = self.conversation.steps[index]
                if recorded.answer is not None:
                    answer = self.conversation.steps[recorded.answer].msg
                    bindings.learn(answer.get("result"), msg.get("result"))
                if not future.done():
                    future.set_result(None)
        elif kind == "request":
            await self._answer(transport, msg, live)
        self.run_.messages.append(live)
        self._progress.set()

    async def _answer(self, transport: Transport, msg: dict[str, Any], live: LiveMessage) -> None:
        """Answer one of the agent's requests as the client answered it then."""
        method = str(msg.get("method"))
        bindings = self.run_.bindings
        recorded = best_match(
            self._agent_requests.get(method, []), msg.get("params"), bindings, self._used
        )
        if recorded is None or recorded.answer is None:
            note = f"the agent's {method} is not in the recording (or was answered already)"
            self.run_.report.unmatched.append(note)
            self.log(f"acp replay: {note}")
            error = {"code": NOT_RECORDED, "message": note, "data": {"replay": "not-recorded"}}
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg.get("id"), "error": error}
        else:
            self._used.add(recorded.index)
            live.matched = recorded.index
            bindings.learn(recorded.msg.get("params"), msg.get("params"))
            reply = cast(
                "dict[str, Any]", bindings.to_live(self.conversation.steps[recorded.answer].msg)
            )
            reply["id"] = msg.get("id")
        await transport.send(msgspec.json.encode(reply))
