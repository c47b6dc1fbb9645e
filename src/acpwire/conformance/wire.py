"""The recording of a check run: every line that crossed the agents' pipes, in order.

:class:`RecordingPipe` sits between a subprocess transport and the client connection that
drives the agent. It appends one :class:`WireEntry` per line to the :class:`Wire` of the
run, which all the agent processes of a run share (each entry names its process), and
wakes whoever waits for a line. The live checks look at answers as they come; the wire
checks read the whole recording afterwards, or a capture loaded with :func:`load_capture`.

A live check that provokes a reply on purpose (a request with invalid params, a probe of
a method the agent did not advertise, a line that is not JSON) *owns* the request and its
answers: it judges them itself, and the wire checks leave them alone, so one defect is
reported once, at the level of the rule it breaks.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import msgspec

from .._waits import within
from ..protocol.framing import Oversize
from ..transports.base import Transport

__all__ = [
    "Direction",
    "Process",
    "RecordingPipe",
    "Waiters",
    "Wire",
    "WireEntry",
    "as_dict",
    "as_list",
    "dict_of",
    "dicts",
    "distinct",
    "id_key",
    "load_capture",
    "short",
    "walk_config_options",
]

Direction = Literal["to_agent", "from_agent"]

UNDECODABLE: Any = object()
"""The ``value`` of a line that is not JSON."""


def id_key(request_id: object) -> Hashable:
    """A request id as a dict key that keeps its JSON type (``1`` and ``"1"`` differ)."""
    if isinstance(request_id, (bool, int, float, str)) or request_id is None:
        return (type(request_id).__name__, request_id)
    return ("other", repr(request_id))


@dataclass(slots=True)
class WireEntry:
    """One line that crossed the pipes; ``value`` is the parsed JSON (or :data:`UNDECODABLE`)."""

    process: str
    direction: Direction
    raw: bytes
    value: Any
    time: float
    owner: str | None = None
    """Set on a reply no request explains (to a line that is not JSON): its judge."""

    @property
    def message(self) -> dict[str, Any] | None:
        return as_dict(self.value)

    @property
    def method(self) -> str | None:
        m = self.message
        method = m.get("method") if m is not None else None
        return method if isinstance(method, str) else None

    @property
    def is_request(self) -> bool:
        m = self.message
        return m is not None and isinstance(m.get("method"), str) and "id" in m

    @property
    def is_response(self) -> bool:
        m = self.message
        return m is not None and "method" not in m and ("result" in m or "error" in m)

    @property
    def params(self) -> dict[str, Any]:
        return dict_of((self.message or {}).get("params"))

    def session_update(self) -> tuple[str, str, dict[str, Any]] | None:
        """(sessionId, sessionUpdate kind, update) of a ``session/update`` from the agent."""
        if self.direction != "from_agent" or self.method != "session/update":
            return None
        params = self.params
        update = dict_of(params.get("update"))
        return str(params.get("sessionId")), str(update.get("sessionUpdate")), update


@dataclass
class Process:
    """One agent process of a run: what the client advertised and the sessions it opened."""

    label: str
    capabilities: dict[str, Any] = field(default_factory=dict[str, Any])
    sessions: set[str] = field(default_factory=set[str])
    roots: list[str] = field(default_factory=list[str])
    """Folders the sessions were opened in (for the fs checks)."""
    provoked: set[str] = field(default_factory=set[str])
    """Session ids a check named on purpose though no session has them (the unknown
    session): updates an agent sends for them are that check's business, not a second
    failure of ``update-sessions``."""


class Wire:
    """Every line of a run, in the order they crossed, and the processes they belong to."""

    def __init__(self) -> None:
        self.entries: list[WireEntry] = []
        self.processes: dict[str, Process] = {}
        self.owners: dict[tuple[str, str], str] = {}

    def add(self, process: str, direction: Direction, raw: bytes, when: float) -> WireEntry:
        entry = WireEntry(process, direction, raw, _decode(raw), when)
        self.entries.append(entry)
        return entry

    def of(self, process: str, start: int = 0, end: int | None = None) -> Iterator[WireEntry]:
        for entry in self.entries[start:end]:
            if entry.process == process:
                yield entry

    def claim(self, process: str, request_id: object, owner: str) -> None:
        """Give the request ``request_id`` of ``process`` and every answer to it to ``owner``.

        Answers are matched by the id's value whatever its JSON type, so an agent that
        answers ``"900001"`` with ``900001`` still has its answer judged by the owner.
        """
        self.owners[(process, str(request_id))] = owner

    def owner(self, entry: WireEntry, asker: Direction = "to_agent") -> str | None:
        """The check that judges ``entry`` alone, if any (see the module docstring): a line
        it marked, or a request it claimed and the answers to it. ``asker`` says which way
        the claimed requests went (``from_agent`` when the checker plays the agent)."""
        if entry.owner is not None:
            return entry.owner
        m = entry.message
        if m is None or "id" not in m:
            return None
        claimed = (entry.direction == asker) == ("method" in m)
        return self.owners.get((entry.process, str(m["id"]))) if claimed else None


def _decode(raw: bytes) -> Any:
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return UNDECODABLE


class Waiters:
    """Who waits for a line of one process, woken when a matching line is recorded."""

    def __init__(self, wire: Wire, process: str) -> None:
        self.wire = wire
        self.process = process
        self._waiting: list[tuple[Callable[[WireEntry], bool], asyncio.Future[WireEntry | None]]]
        self._waiting = []

    def recorded(self, entry: WireEntry) -> None:
        """Wake whoever waits for ``entry``."""
        for predicate, future in list(self._waiting):
            if not future.done() and predicate(entry):
                future.set_result(entry)

    def ended(self) -> None:
        """Nothing more comes: every waiter gets None now."""
        for _, future in self._waiting:
            if not future.done():
                future.set_result(None)

    async def first(
        self, predicate: Callable[[WireEntry], bool], since: int, timeout: float
    ) -> WireEntry | None:
        """The first entry of the process from index ``since`` on that matches, waiting up to
        ``timeout`` seconds for it; None when none came."""
        for entry in self.wire.of(self.process, since):
            if predicate(entry):
                return entry
        future: asyncio.Future[WireEntry | None] = asyncio.get_running_loop().create_future()
        waiter = (predicate, future)
        self._waiting.append(waiter)
        try:
            return await within(future, timeout)
        except asyncio.TimeoutError:
            return None
        finally:
            self._waiting.remove(waiter)


class RecordingPipe:
    """Wraps a transport: records each line on the wire and wakes whoever waits for one."""

    def __init__(self, inner: Transport, process: str, wire: Wire) -> None:
        self.inner = inner
        self.process = process
        self.wire = wire
        self.waiters = Waiters(wire, process)

    def _add(self, direction: Direction, raw: bytes) -> None:
        self.waiters.recorded(self.wire.add(self.process, direction, raw, time.monotonic()))

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
        """The first entry of this process from index ``since`` on that matches, or None."""
        return await self.waiters.first(predicate, since, timeout)


def load_capture(path: str | Path, process: str = "capture") -> Wire:
    """A wire capture (one JSON object per line: ``dir``, ``msg`` or ``raw``, ``ms``) as a Wire.

    The format is the one of the captures of real agents kept beside the project; lines
    whose ``dir`` is neither ``client->agent`` nor ``agent->client`` (notes) are skipped.
    The client's capabilities, the session folders and the sessions the agent set up
    (new, load, resume answered with a result) are read from the messages themselves.
    """
    wire = Wire()
    proc = wire.processes[process] = Process(process)
    asked: dict[Hashable, WireEntry] = {}
    directions: dict[str, Direction] = {"client->agent": "to_agent", "agent->client": "from_agent"}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            record = dict_of(json.loads(line))
            direction = directions.get(str(record.get("dir")))
            if direction is None:
                continue
            raw_text = record.get("raw")
            raw = (
                raw_text.encode()
                if isinstance(raw_text, str)
                else msgspec.json.encode(record.get("msg"))
            )
            entry = wire.add(process, direction, raw, float(record.get("ms") or 0) / 1000)
            m = entry.message
            if m is None:
                continue
            if direction == "to_agent" and entry.is_request:
                asked[id_key(m["id"])] = entry
                if entry.method == "initialize":
                    proc.capabilities = dict_of(entry.params.get("clientCapabilities"))
                cwd = entry.params.get("cwd")
                if entry.method in ("session/new", "session/load", "session/resume") and (
                    isinstance(cwd, str)
                ):
                    proc.roots.append(cwd)
            elif direction == "from_agent" and entry.is_response and "result" in m:
                request = asked.get(id_key(m.get("id")))
                if request is None:
                    continue
                sid = (
                    dict_of(m["result"]).get("sessionId")
                    if request.method == "session/new"
                    else request.params.get("sessionId")
                    if request.method in ("session/load", "session/resume")
                    else None
                )
                if isinstance(sid, str):
                    proc.sessions.add(sid)
    return wire


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


Found = TypeVar("Found", str, tuple[str, str])


def distinct(problems: list[Found]) -> list[Found]:
    """Problems in order, each distinct one once: a problem is a sentence or a (requirement
    id, sentence) pair, and sentences that differ only in their ``[process]`` prefix are
    the same defect seen in several processes or scenarios."""
    seen: set[str] = set()
    out: list[Found] = []
    for p in problems:
        text: str = p[1] if isinstance(p, tuple) else p
        bare = re.sub(r"^\[[^\]]*\] ", "", text)
        if bare not in seen:
            seen.add(bare)
            out.append(p)
    return out


def short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def walk_config_options(value: Any) -> Iterator[Any]:
    """Every config option inside ``value`` (results, notifications), found by key."""
    obj = as_dict(value)
    array = as_list(value)
    if obj is not None:
        for key, item in obj.items():
            options = as_list(item) if key == "configOptions" else None
            if options is not None:
                yield from options
            else:
                yield from walk_config_options(item)
    elif array is not None:
        for item in array:
            yield from walk_config_options(item)
