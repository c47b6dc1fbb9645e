"""The recorded agent, served to a real client: ``acp replay FILE --as-agent``.

A request from the client is matched to a recorded request of the same method that was
not used yet (the most alike after :mod:`.matching`'s tolerance; the earliest on a
tie), and the messages that belonged to it (:mod:`.conversation`) are played in their
recorded order: the agent's notifications are sent, its own requests (permission,
files, terminals, elicitation) are sent and the client's answers awaited and compared
with the recorded ones, a client notification that was recorded there (a
``session/cancel``) is waited for, and the recorded answer goes out with the live
request's id. Everything sent is the recorded message, with the ids the client made up
and the workspace path put in the live run's terms (:class:`~.matching.Bindings`).

What does not match is answered, not guessed: a request with nothing left to match gets
``-32603`` with ``data.replay`` saying so; answers that differ from the recorded ones are
reported (:attr:`ReplayReport.mismatches`). Notifications are sent as fast as possible,
or with their recorded spacing (``realtime``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import msgspec

from .._tasks import TaskSet
from ..protocol.framing import Oversize
from ..transports.base import Transport
from .conversation import Conversation, Step, message_kind
from .matching import Bindings, differences, normalise, similarity

__all__ = ["ReplayAgent", "ReplayReport", "best_match"]

log = logging.getLogger("acpwire.recorder")

MAX_PAUSE = 5.0
"""Longest recorded pause replayed in real time (a person who went for coffee)."""
NOT_RECORDED = -32603


@dataclass
class ReplayReport:
    """What differed from the recording while it was replayed."""

    unmatched: list[str] = field(default_factory=list[str])
    """Requests that had nothing left to match in the recording."""
    mismatches: list[str] = field(default_factory=list[str])
    """Answers and notifications of the live peer that differ from the recorded ones."""

    @property
    def ok(self) -> bool:
        return not self.unmatched and not self.mismatches


def best_match(
    candidates: list[Step], params: Any, bindings: Bindings, used: set[int]
) -> Step | None:
    """The recorded step most like ``params`` (live) among ``candidates`` not ``used``."""
    live = normalise(bindings.to_recorded(params))
    best: Step | None = None
    score = -1.0
    for step in candidates:
        if step.index in used:
            continue
        alike = similarity(normalise(step.msg.get("params")), live)
        if alike > score:
            best, score = step, alike
            if alike == 1.0:
                break
    return best


def _encode(msg: dict[str, Any]) -> bytes:
    return msgspec.json.encode(msg)


class _Inbox:
    """Live notifications a script may be waiting for, by method."""

    def __init__(self) -> None:
        self.early: list[dict[str, Any]] = []
        self.waiting: list[tuple[str, asyncio.Future[dict[str, Any]]]] = []

    def deliver(self, msg: dict[str, Any]) -> None:
        for i, (method, future) in enumerate(self.waiting):
            if method == msg.get("method") and not future.done():
                del self.waiting[i]
                future.set_result(msg)
                return
        self.early.append(msg)

    async def expect(self, method: str) -> dict[str, Any]:
        for i, msg in enumerate(self.early):
            if msg.get("method") == method:
                return self.early.pop(i)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting.append((method, future))
        return await future


class ReplayAgent:
    """Serves the agent side of a recorded conversation (see the module docstring)."""

    def __init__(
        self,
        conversation: Conversation,
        *,
        realtime: bool = False,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.conversation = conversation
        self.realtime = realtime
        self.log = log or (lambda text: None)
        self.bindings = Bindings()
        self.report = ReplayReport()
        self._used: set[int] = set()
        self._by_method: dict[str, list[Step]] = {}
        for step in conversation.of("client"):
            if step.kind == "request" and step.method is not None:
                self._by_method.setdefault(step.method, []).append(step)
        self._answers: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._inbox = _Inbox()
        self._transport: Transport | None = None

    async def serve(self, transport: Transport) -> ReplayReport:
        """Serve until the client hangs up; returns what differed."""
        self._transport = transport
        scripts = TaskSet(log)
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
                    await self._send({"jsonrpc": "2.0", "id": None, "error": _parse_error()})
                    continue
                if not isinstance(msg, dict):
                    continue
                msg = cast("dict[str, Any]", msg)
                kind = message_kind(msg)
                if kind == "request":
                    scripts.spawn(self._serve_request(msg))
                elif kind == "notification":
                    if msg.get("method") != "$/cancel_request":
                        self._inbox.deliver(msg)
                else:
                    waiter = self._answers.pop(repr(msg.get("id")), None)
                    if waiter is not None and not waiter.done():
                        waiter.set_result(msg)
        finally:
            await scripts.aclose()
            with contextlib.suppress(Exception):
                await transport.close()
        return self.report

    async def _send(self, msg: dict[str, Any]) -> None:
        assert self._transport is not None
        await self._transport.send(_encode(msg))

    async def _serve_request(self, live: dict[str, Any]) -> None:
        method = str(live.get("method"))
        recorded = best_match(
            self._by_method.get(method, []), live.get("params"), self.bindings, self._used
        )
        if recorded is None:
            note = f"{method} is not in the recording (or was replayed already)"
            self.report.unmatched.append(note)
            self.log(f"acp replay: {note}")
            error = {"code": NOT_RECORDED, "message": note, "data": {"replay": "not-recorded"}}
            await self._send({"jsonrpc": "2.0", "id": live.get("id"), "error": error})
            return
        self._used.add(recorded.index)
        self.bindings.learn(recorded.msg.get("params"), live.get("params"))
        await self._play(recorded, live)

    async def _pause(self, since: float, step: Step) -> float:
        if self.realtime:
            await asyncio.sleep(min(MAX_PAUSE, max(0.0, step.t - since)))
        return step.t

    async def _play(self, request: Step, live: dict[str, Any]) -> None:
        steps = self.conversation.steps
        clock = request.t
        for index in request.owned:
            step = steps[index]
            clock = await self._pause(clock, step)
            if step.sender == "client":
                if step.kind == "notification" and step.method is not None:
                    await self._inbox.expect(step.method)
                continue  # the client's answers are awaited where the agent asks
            out = self.bindings.to_live(step.msg)
            if step.answers == request.index:
                out["id"] = live.get("id")
                await self._send(out)
            elif step.kind == "request":
                await self._ask(step, out)
            else:
                await self._send(out)

    async def _ask(self, step: Step, out: dict[str, Any]) -> None:
        """Send one of the agent's recorded requests and check the client's answer."""
        if step.answer is None:  # never answered in the recording: do not wait either
            await self._send(out)
            return
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._answers[repr(out.get("id"))] = waiter
        await self._send(out)
        answer = await waiter
        recorded = self.conversation.steps[step.answer].msg
        part = "error" if "error" in recorded else "result"
        live_part = "error" if "error" in answer else "result"
        self.bindings.learn(recorded.get(part), answer.get(live_part))
        found = differences(
            normalise({part: recorded.get(part)}),
            normalise({live_part: self.bindings.to_recorded(answer.get(live_part))}),
        )
        for d in found:
            note = (
                f"{step.method} answer differs at {d.path}: recorded {d.recorded!r}, now {d.live!r}"
            )
            self.report.mismatches.append(note)
            self.log(f"acp replay: {note}")


def _parse_error() -> dict[str, Any]:
    return {"code": -32700, "message": "Parse error"}
