"""The recording of a check run: every line that crossed the agents' pipes, in order.

:class:`RecordingPipe` sits between a subprocess transport and the client connection that
drives the agent; it appends one :class:`WireEntry` per line to a list shared by all the
processes of a run (each entry names its run) and wakes whoever waits for a line. The
live checks look at answers as they come; the wire checks read the whole list afterwards.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, cast

import msgspec

from ...protocol.framing import Oversize
from ...transports.subprocess import SubprocessTransport

__all__ = [
    "Direction",
    "RecordingPipe",
    "WireEntry",
    "as_dict",
    "as_list",
    "dict_of",
    "dicts",
    "short",
]

Direction = Literal["to_agent", "from_agent"]

_UNDECODABLE = object()


@dataclass(slots=True)
class WireEntry:
    """One line that crossed the pipes; ``value`` is the parsed JSON (or :data:`_UNDECODABLE`)."""

    run: str
    direction: Direction
    raw: bytes
    value: Any
    time: float

    @property
    def message(self) -> dict[str, Any] | None:
        return as_dict(self.value)

    @property
    def method(self) -> str | None:
        m = self.message
        method = m.get("method") if m is not None else None
        return method if isinstance(method, str) else None

    @property
    def is_response(self) -> bool:
        m = self.message
        return m is not None and "method" not in m and ("result" in m or "error" in m)

    def session_update(self) -> tuple[str, str] | None:
        """(sessionId, sessionUpdate kind) of a ``session/update`` from the agent."""
        if self.direction != "from_agent" or self.method != "session/update":
            return None
        params = as_dict(self.message.get("params")) if self.message else None
        if params is None:
            return None
        update = as_dict(params.get("update"))
        kind = update.get("sessionUpdate") if update is not None else None
        return str(params.get("sessionId")), str(kind)


def _decode(raw: bytes) -> Any:
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return _UNDECODABLE


class RecordingPipe:
    """Wraps the subprocess transport: records each line and wakes whoever waits for one."""

    def __init__(self, inner: SubprocessTransport, run: str, entries: list[WireEntry]) -> None:
        self.inner = inner
        self.run = run
        self.entries = entries
        self._waiters: list[tuple[Callable[[WireEntry], bool], asyncio.Future[WireEntry]]] = []

    def _add(self, direction: Direction, raw: bytes) -> None:
        entry = WireEntry(self.run, direction, raw, _decode(raw), time.monotonic())
        self.entries.append(entry)
        for predicate, future in list(self._waiters):
            if not future.done() and predicate(entry):
                future.set_result(entry)

    async def send(self, message: bytes) -> None:
        self._add("to_agent", message)
        await self.inner.send(message)

    async def receive(self) -> bytes | Oversize | None:
        message = await self.inner.receive()
        if isinstance(message, bytes):
            self._add("from_agent", message)
        elif isinstance(message, Oversize):
            self._add("from_agent", b"<oversize message dropped>")
        return message

    async def close(self) -> None:
        await self.inner.close()

    async def wait_for(
        self, predicate: Callable[[WireEntry], bool], since: int, timeout: float
    ) -> WireEntry | None:
        """The first entry from index ``since`` on that matches, waiting up to ``timeout``."""
        for entry in self.entries[since:]:
            if entry.run == self.run and predicate(entry):
                return entry
        future: asyncio.Future[WireEntry] = asyncio.get_running_loop().create_future()
        waiter = (predicate, future)
        self._waiters.append(waiter)
        try:
            return await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            return None
        finally:
            self._waiters.remove(waiter)


def as_dict(value: object) -> dict[str, Any] | None:
    """``value`` if it is a JSON object (decoded JSON objects have string keys), else None."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def as_list(value: object) -> list[object] | None:
    """``value`` if it is a JSON array, else None."""
    return cast("list[object]", value) if isinstance(value, list) else None


def dict_of(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    obj = as_dict(value)
    return obj if obj is not None else {}


def dicts(items: Iterable[object]) -> list[dict[str, Any]]:
    """The JSON objects among ``items``, in order (other values are skipped)."""
    return [obj for obj in map(as_dict, items) if obj is not None]


def short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
