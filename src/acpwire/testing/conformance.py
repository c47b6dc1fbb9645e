"""A black-box conformance checker for ACP agents that speak stdio (``acp check``).

The checker starts the agent as a child process and talks to it the way an editor would,
through acpwire's client connection over real pipes, while recording every line that
crosses the pipes. Some checks look at answers (``initialize`` version negotiation, stop
reasons, error codes); the others read the recording afterwards: nothing but JSON-RPC on
stdout, every message valid against the official schema, every request answered once,
session updates before the response that ends their turn, no calls to methods the client
did not advertise.

The client advertises no optional capabilities at all, so any ``fs/*``, ``terminal/*`` or
``elicitation/create`` call from the agent is a violation; permission requests are
answered with a reject option (or ``cancelled``), so a checked agent never gets to change
anything. Sessions are created in a fresh temporary folder.

Each check cites rule ids of :mod:`acpwire.testing.requirements`. A check's level is the
strongest level among its rules; the run fails (:attr:`Report.exit_code` 1) when a check
at level MUST fails. Checks that cannot run say why (``skip``); checks of features the
agent does not offer are ``n/a``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, cast

import msgspec

from .. import schema as s
from ..client.connection import Client, ClientSideConnection
from ..engine.roles import gate_allows
from ..protocol.errors import ConnectionClosedError, RequestError
from ..protocol.framing import Oversize
from ..schema.methods import BY_NAME
from ..transports.subprocess import AgentNotFoundError, SubprocessTransport, spawn
from .requirements import BY_ID, Level

__all__ = [
    "CHECKS",
    "CheckOptions",
    "CheckResult",
    "CheckSpec",
    "Report",
    "Status",
    "find_official_schema",
    "run_checks",
    "select_checks",
]

Status = Literal["pass", "fail", "skip", "n/a"]
Direction = Literal["to_agent", "from_agent"]

STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})
TURN_CONTENT_UPDATES = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
)
"""Update kinds that belong to a turn (metadata updates may come at any time)."""
REPLAY_UPDATES = TURN_CONTENT_UPDATES | {"user_message_chunk"}
"""Update kinds a session/load replay is made of."""
CANCEL_GRACE = 5.0
"""Seconds within which a cancelled turn should be answered (CANCEL-003)."""
SHUTDOWN_GRACE = 5.0
"""Seconds within which the agent should exit once its stdin is closed (SHUT-001)."""
TURN_START_WAIT = 2.0
"""How long to wait for the first update of a slow turn before cancelling it anyway."""
AUTH_REQUIRED = -32000
PARSE_ERROR = -32700
METHOD_NOT_FOUND = -32601
UNKNOWN_METHOD = "acpwire_check/unknown_method"
UNKNOWN_EXT_METHOD = "_acpwire_check/unknown_request"
PING_METHOD = "acpwire_check/ping"
MALFORMED_LINE = b'{"jsonrpc": "2.0", "id": 999, "method": this is not JSON'


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """One check: a stable ``key`` (usable with ``--only``), a title and the rules it tests."""

    key: str
    title: str
    ids: tuple[str, ...]

    @property
    def level(self) -> Level:
        return "MUST" if any(BY_ID[i].level == "MUST" for i in self.ids) else "SHOULD"


CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec("initialize", "initialize answers the requested version 1", ("INIT-003", "INIT-008")),
    CheckSpec("version-newer", "asked for version 2, the agent answers 1", ("INIT-009",)),
    CheckSpec("version-unknown", "asked for version 65535, the agent answers 1", ("INIT-009",)),
    CheckSpec("agent-info", "initialize names the agent (agentInfo)", ("INIT-005",)),
    CheckSpec(
        "stdout-clean",
        "stdout carries only JSON-RPC messages, one per line",
        ("TRANS-001", "TRANS-003", "TRANS-004"),
    ),
    CheckSpec("schema", "every message matches the official v1 schema", ("SCHEMA-001", "INIT-017")),
    CheckSpec(
        "responses",
        "every request gets exactly one well-formed response with its id",
        ("RPC-001", "RPC-003", "RPC-005"),
    ),
    CheckSpec("unknown-method", "an unknown method is answered -32601", ("RPC-006",)),
    CheckSpec("ext-request", "an unknown _ request is answered", ("EXT-003",)),
    CheckSpec("ext-request-code", "an unknown _ request is answered -32601", ("EXT-004",)),
    CheckSpec("notification-unanswered", "notifications get no response", ("RPC-002",)),
    CheckSpec(
        "notifications-ignored",
        "unknown _ and $/ notifications are ignored",
        ("EXT-006", "RCANCEL-003"),
    ),
    CheckSpec("malformed-line", "the agent survives a line that is not JSON", ("RPC-009",)),
    CheckSpec(
        "malformed-line-error", "a line that is not JSON is answered -32700, id null", ("RPC-010",)
    ),
    CheckSpec("session-new", "session/new with an absolute cwd and no MCP servers", ("INIT-015",)),
    CheckSpec("session-unique", "two sessions get two different ids", ("SESS-002",)),
    CheckSpec("prompt", "a prompt ends with a valid stopReason", ("PROMPT-003", "PROMPT-005")),
    CheckSpec("turn-order", "a turn's updates arrive before its response", ("PROMPT-003",)),
    CheckSpec("update-sessions", "session/update names only known sessions", ("PROMPT-006",)),
    CheckSpec(
        "cancel",
        "session/cancel ends the turn with stopReason cancelled",
        ("CANCEL-004", "CANCEL-005", "CANCEL-006"),
    ),
    CheckSpec("cancel-prompt", "a cancelled turn ends within a few seconds", ("CANCEL-003",)),
    CheckSpec(
        "after-cancel",
        "the session takes a prompt after a cancelled turn",
        ("CANCEL-008", "PROMPT-007"),
    ),
    CheckSpec(
        "capability-gates",
        "no fs/terminal/elicitation calls or boolean options the client did not advertise",
        ("FS-002", "TERM-002", "ELIC-005", "CFG-003"),
    ),
    CheckSpec(
        "session-load",
        "session/load replays the history before responding",
        ("SESS-006", "SESS-007"),
    ),
    CheckSpec(
        "session-list", "session/list shape and cwd filter", ("LIST-004", "LIST-005", "LIST-011")
    ),
    CheckSpec("set-mode", "session/set_mode with an offered mode succeeds", ("MODE-002",)),
    CheckSpec("mode-state", "currentModeId is one of the offered modes", ("MODE-004",)),
    CheckSpec("config-options", "every config option has a valid current value", ("CFG-010",)),
    CheckSpec(
        "set-config-option", "session/set_config_option returns the complete list", ("CFG-012",)
    ),
    CheckSpec(
        "unadvertised-methods",
        "optional methods not advertised are answered with errors",
        ("SESS-030",),
    ),
    CheckSpec("shutdown", "the agent exits when its stdin is closed", ("SHUT-001",)),
)
CHECKS_BY_KEY: Mapping[str, CheckSpec] = {c.key: c for c in CHECKS}
INDEPENDENT_CHECKS = frozenset(
    {
        "version-newer",
        "version-unknown",
        "shutdown",
        "stdout-clean",
        "schema",
        "responses",
        "capability-gates",
        "update-sessions",
    }
)
"""Checks that run whatever happened on the main connection."""


def select_checks(only: Sequence[str] | None) -> frozenset[str]:
    """Keys of the checks named by ``only`` (check keys or requirement ids; all when empty).

    Raises ``ValueError`` naming anything that is neither.
    """
    if not only:
        return frozenset(CHECKS_BY_KEY)
    chosen: set[str] = set()
    unknown: list[str] = []
    for token in only:
        token = token.strip()
        if not token:
            continue
        if token in CHECKS_BY_KEY:
            chosen.add(token)
            continue
        matches = {c.key for c in CHECKS if token.upper() in c.ids}
        if not matches:
            unknown.append(token)
        chosen |= matches
    if unknown:
        raise ValueError(f"unknown check or requirement id: {', '.join(unknown)}")
    return frozenset(chosen)


def find_official_schema(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The official ACP v1 ``schema.json``, or None.

    Looks at ``explicit``, then ``$ACPWIRE_SCHEMA_DIR/v1/schema.json``, then an npm install
    of ``@agentclientprotocol/sdk`` (``node_modules`` or acpwire's ``.cache/npm``) in the
    current folder, the folders above it, and the folders above this package.
    """
    if explicit is not None:
        path = Path(explicit)
        return path if path.is_file() else None
    candidates: list[Path] = []
    env = os.environ.get("ACPWIRE_SCHEMA_DIR")
    if env:
        candidates.append(Path(env) / "v1" / "schema.json")
    tail = Path("@agentclientprotocol") / "sdk" / "schema" / "v1" / "schema.json"
    here = Path.cwd().resolve()
    package = Path(__file__).resolve().parent
    for base in (here, *here.parents, *package.parents):
        candidates.append(base / "node_modules" / tail)
        candidates.append(base / ".cache" / "npm" / "node_modules" / tail)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return None


@dataclass
class CheckOptions:
    """What to check and how: the agent's argv and the knobs of ``acp check``."""

    command: Sequence[str]
    prompt: str = "Hello"
    """A prompt the agent answers quickly."""
    slow_prompt: str | None = None
    """A prompt that keeps the agent busy long enough to be cancelled (cancel checks skip without)."""
    only: frozenset[str] | None = None
    """Check keys to run and report (see :func:`select_checks`); None means all."""
    timeout: float = 30.0
    """Seconds to wait for any one answer (a turn included)."""
    cwd: str | None = None
    """The sessions' folder (absolute); a fresh temporary folder when None."""
    schema: str | os.PathLike[str] | None = None
    auth_method: str | None = None
    """``authenticate`` with this method id when session/new says authentication is required."""
    env: Mapping[str, str] | None = None


@dataclass(slots=True)
class CheckResult:
    check: CheckSpec
    status: Status
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check.key,
            "title": self.check.title,
            "status": self.status,
            "level": self.check.level,
            "requirements": list(self.check.ids),
            "detail": self.detail,
        }


@dataclass
class Report:
    """Results in :data:`CHECKS` order, plus what the agent said about itself."""

    command: list[str]
    results: list[CheckResult] = field(default_factory=list[CheckResult])
    agent_info: dict[str, Any] | None = None
    protocol_version: Any = None
    notes: list[str] = field(default_factory=list[str])
    duration: float = 0.0

    @property
    def failed_must(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "fail" and r.check.level == "MUST"]

    @property
    def exit_code(self) -> int:
        """0 when no MUST check failed, else 1."""
        return 1 if self.failed_must else 0

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "skip": 0, "n/a": 0}
        for r in self.results:
            out[r.status] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "agentInfo": self.agent_info,
            "protocolVersion": self.protocol_version,
            "results": [r.to_json() for r in self.results],
            "counts": self.counts(),
            "failedMust": [r.check.key for r in self.failed_must],
            "exitCode": self.exit_code,
            "notes": self.notes,
            "durationSeconds": round(self.duration, 3),
        }


# --------------------------------------------------------------------------- the wire


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
        return _as_dict(self.value)

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
        params = _as_dict(self.message.get("params")) if self.message else None
        if params is None:
            return None
        update = _as_dict(params.get("update"))
        kind = update.get("sessionUpdate") if update is not None else None
        return str(params.get("sessionId")), str(kind)


def _decode(raw: bytes) -> Any:
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return _UNDECODABLE


class _RecordingPipe:
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


class _ProbeClient(Client):
    """Advertises nothing optional; rejects every permission request."""

    def capabilities(self) -> s.ClientCapabilities:
        return s.ClientCapabilities()

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        for option in params.options:
            if str(option.kind).startswith("reject"):
                return s.RequestPermissionResponse(
                    outcome=s.SelectedPermissionOutcome(option_id=option.option_id)
                )
        return s.RequestPermissionResponse(outcome=s.CancelledPermissionOutcome())


CLIENT_CAPABILITIES: dict[str, Any] = {}
"""What the checker advertises in ``initialize``: no optional capability."""


@dataclass(slots=True)
class _Answer:
    """The outcome of one request: a result, a JSON-RPC error, or a problem (timeout, hang-up)."""

    result: Any = None
    error: RequestError | None = None
    problem: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.problem is None

    @property
    def answered(self) -> bool:
        return self.problem is None

    def describe(self) -> str:
        if self.problem is not None:
            return self.problem
        if self.error is not None:
            return f"error {self.error.code}: {self.error.message}"
        return "a result"


def _client_info() -> dict[str, str]:
    try:
        version = metadata.version("acpwire")
    except metadata.PackageNotFoundError:  # pragma: no cover - bare checkout
        version = "0"
    return {"name": "acp-check", "title": "acpwire conformance checker", "version": version}


class _Run:
    """One agent process, driven by a client connection whose wire is recorded."""

    def __init__(self, checker: _Checker, label: str) -> None:
        self.checker = checker
        self.label = label
        self.transport: SubprocessTransport | None = None
        self.pipe: _RecordingPipe | None = None
        self.conn: ClientSideConnection | None = None
        self.sessions: set[str] = set()
        self.start_problem: str | None = None

    @property
    def timeout(self) -> float:
        return self.checker.options.timeout

    async def start(self) -> bool:
        command = list(self.checker.options.command)
        try:
            self.transport = await spawn(command[0], command[1:], env=self.checker.options.env)
        except AgentNotFoundError as exc:
            self.start_problem = str(exc)
            return False
        self.pipe = _RecordingPipe(self.transport, self.label, self.checker.entries)
        self.conn = ClientSideConnection(_ProbeClient(), self.pipe, check_capabilities=False)
        return True

    def _exit_note(self) -> str:
        t = self.transport
        if t is None:
            return ""
        note = ""
        if t.returncode is not None:
            note = f" (agent exited with status {t.returncode})"
        tail = t.stderr_tail().strip().splitlines()[-3:]
        if tail:
            note += "; stderr: " + " | ".join(tail)
        return note

    async def call(self, method: str, params: Any, timeout: float | None = None) -> _Answer:
        assert self.conn is not None
        started = time.monotonic()
        try:
            result = await asyncio.wait_for(
                self.conn.connection.request(method, params), timeout or self.timeout
            )
        except asyncio.TimeoutError:
            return _Answer(
                problem=f"no answer to {method} within {timeout or self.timeout:g} s",
                seconds=time.monotonic() - started,
            )
        except RequestError as exc:
            return _Answer(error=exc, seconds=time.monotonic() - started)
        except ConnectionClosedError:
            # Let the process finish exiting so the note can say how it ended.
            if self.transport is not None:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.transport.process.wait(), 1.0)
            return _Answer(
                problem=f"the connection closed before {method} was answered{self._exit_note()}",
                seconds=time.monotonic() - started,
            )
        return _Answer(result=result, seconds=time.monotonic() - started)

    async def notify(self, method: str, params: Any) -> None:
        assert self.conn is not None
        with contextlib.suppress(ConnectionClosedError):
            await self.conn.connection.notify(method, params)

    async def send_raw(self, line: bytes) -> None:
        assert self.pipe is not None
        with contextlib.suppress(ConnectionClosedError):
            await self.pipe.send(line)

    async def ping(self) -> _Answer:
        """A request any agent answers (with -32601), to know earlier lines were processed."""
        return await self.call(PING_METHOD, {})

    def mark(self) -> int:
        return len(self.checker.entries)

    def entries(self, start: int = 0, end: int | None = None) -> Iterator[WireEntry]:
        for entry in self.checker.entries[start:end]:
            if entry.run == self.label:
                yield entry

    def response_index(self, since: int, method: str) -> int | None:
        """Index of the response to the first ``method`` request sent from ``since`` on."""
        request_id: Any = None
        entries = self.checker.entries
        for i in range(since, len(entries)):
            e = entries[i]
            if e.run != self.label:
                continue
            m = e.message
            if m is None:
                continue
            if request_id is None:
                if e.direction == "to_agent" and m.get("method") == method and "id" in m:
                    request_id = m["id"]
            elif e.direction == "from_agent" and e.is_response and m.get("id") == request_id:
                return i
        return None

    def updates(
        self,
        session_id: str,
        start: int,
        end: int | None = None,
        kinds: frozenset[str] | None = None,
    ) -> list[str]:
        out: list[str] = []
        for entry in self.entries(start, end):
            su = entry.session_update()
            if su is not None and su[0] == session_id and (kinds is None or su[1] in kinds):
                out.append(su[1])
        return out

    async def close_stdin_and_wait(self) -> int | None:
        """Close the agent's stdin and wait up to :data:`SHUTDOWN_GRACE` for it to exit."""
        t = self.transport
        if t is None:
            return None
        stdin = t.process.stdin
        if stdin is not None:
            with contextlib.suppress(Exception):
                stdin.close()
        try:
            return await asyncio.wait_for(t.process.wait(), SHUTDOWN_GRACE)
        except asyncio.TimeoutError:
            return None

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
        elif self.transport is not None:
            await self.transport.close()


def _error_code(answer: _Answer) -> int | None:
    return answer.error.code if answer.error is not None else None


def _as_dict(value: object) -> dict[str, Any] | None:
    """``value`` if it is a JSON object (decoded JSON objects have string keys), else None."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def _as_list(value: object) -> list[object] | None:
    """``value`` if it is a JSON array, else None."""
    return cast("list[object]", value) if isinstance(value, list) else None


def _dict(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    obj = _as_dict(value)
    return obj if obj is not None else {}


def _dicts(items: Iterable[object]) -> list[dict[str, Any]]:
    """The JSON objects among ``items``, in order (other values are skipped)."""
    return [obj for obj in map(_as_dict, items) if obj is not None]


def _select_values(option: dict[str, Any]) -> list[Any]:
    """The values of a select config option (flat or grouped)."""
    values: list[Any] = []
    for item in _dicts(option.get("options") or ()):
        if "value" in item:
            values.append(item["value"])
        for sub in _dicts(item.get("options") or ()):
            if "value" in sub:
                values.append(sub["value"])
    return values


def _config_problems(options: Any) -> list[str]:
    problems: list[str] = []
    option_list = _as_list(options)
    if option_list is None:
        return ["configOptions is not a list"]
    for item in option_list:
        option = _as_dict(item)
        if option is None:
            problems.append(f"config option {item!r} is not an object")
            continue
        oid = option.get("id")
        if "currentValue" not in option:
            problems.append(f"option {oid!r} has no currentValue")
        elif option.get("type") == "select":
            values = _select_values(option)
            if option["currentValue"] not in values:
                problems.append(
                    f"option {oid!r}: currentValue {option['currentValue']!r} is not one of {values!r}"
                )
    return problems


def _walk_config_options(value: Any) -> Iterator[Any]:
    """Every config option inside ``value`` (results, notifications), found by key."""
    obj = _as_dict(value)
    array = _as_list(value)
    if obj is not None:
        for key, item in obj.items():
            options = _as_list(item) if key == "configOptions" else None
            if options is not None:
                yield from options
            else:
                yield from _walk_config_options(item)
    elif array is not None:
        for item in array:
            yield from _walk_config_options(item)


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Checker:
    def __init__(self, options: CheckOptions) -> None:
        self.options = options
        self.selected = options.only if options.only is not None else frozenset(CHECKS_BY_KEY)
        self.entries: list[WireEntry] = []
        self.results: dict[str, CheckResult] = {}
        self.report = Report(command=list(options.command))
        self.cwd = options.cwd or ""
        self.runs: list[_Run] = []

    # -- results

    def record(self, key: str, status: Status, detail: str = "") -> None:
        spec = CHECKS_BY_KEY[key]
        if key in self.selected and key not in self.results:
            self.results[key] = CheckResult(spec, status, detail)

    def verdict(self, key: str, problems: Sequence[str], ok_detail: str = "") -> None:
        if problems:
            self.record(
                key, "fail", "; ".join(problems[:3]) + (" ..." if len(problems) > 3 else "")
            )
        else:
            self.record(key, "pass", ok_detail)

    def skip_rest(self, reason: str) -> None:
        """Skip every check that needs the main connection (not the wire or version checks)."""
        for spec in CHECKS:
            if spec.key not in INDEPENDENT_CHECKS:
                self.record(spec.key, "skip", reason)

    def wants(self, *keys: str) -> bool:
        return any(k in self.selected for k in keys)

    def new_run(self, label: str) -> _Run:
        run = _Run(self, label)
        self.runs.append(run)
        return run

    # -- version probes (own processes)

    async def version_probe(self, version: int, key: str) -> int | None:
        run = self.new_run(f"v{version}")
        try:
            if not await run.start():
                self.record(key, "fail", f"agent not started: {run.start_problem}")
                return None
            answer = await run.call(
                "initialize",
                {
                    "protocolVersion": version,
                    "clientCapabilities": CLIENT_CAPABILITIES,
                    "clientInfo": _client_info(),
                },
            )
            if not answer.ok:
                self.record(
                    key, "fail", f"initialize(protocolVersion={version}): {answer.describe()}"
                )
            else:
                got = _dict(answer.result).get("protocolVersion")
                if not isinstance(got, bool) and got == 1:
                    self.record(key, "pass", f"answered {got}")
                else:
                    self.record(
                        key,
                        "fail",
                        f"asked {version}, answered {got!r}; ACP defines version 1 only, "
                        "so 1 is the newest version an agent can support",
                    )
            if not answer.answered:
                return None
            return await run.close_stdin_and_wait()
        finally:
            await run.close()

    async def version_probes(self) -> None:
        if not self.wants("version-newer", "version-unknown", "shutdown"):
            return
        codes = await asyncio.gather(
            self.version_probe(2, "version-newer"), self.version_probe(65535, "version-unknown")
        )
        slow = [c for c in codes if c is None]
        if slow:
            self.record(
                "shutdown",
                "fail",
                f"the agent was still running {SHUTDOWN_GRACE:g} s after its stdin was closed",
            )
        else:
            self.record("shutdown", "pass", f"exit status {', '.join(str(c) for c in codes)}")

    # -- the main run

    async def main_run(self) -> None:
        run = self.new_run("main")
        try:
            await self._main(run)
        finally:
            await run.close()

    async def _main(self, run: _Run) -> None:
        if not await run.start():
            self.record("initialize", "fail", f"agent not started: {run.start_problem}")
            self.skip_rest("the agent did not start")
            return
        init = await run.call(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": CLIENT_CAPABILITIES,
                "clientInfo": _client_info(),
            },
        )
        if not init.ok:
            self.record("initialize", "fail", f"initialize: {init.describe()}")
            self.skip_rest("initialize failed")
            return
        result = _dict(init.result)
        version = result.get("protocolVersion")
        self.report.protocol_version = version
        info = result.get("agentInfo")
        agent_info = self.report.agent_info = _as_dict(info)
        if not isinstance(version, bool) and version == 1:
            self.record("initialize", "pass", "protocolVersion 1")
        else:
            self.record("initialize", "fail", f"asked 1, answered protocolVersion {version!r}")
        if agent_info is not None and agent_info.get("name") and agent_info.get("version"):
            self.record(
                "agent-info", "pass", f"{agent_info.get('name')} {agent_info.get('version')}"
            )
        else:
            self.record("agent-info", "fail", f"agentInfo is {_short(info)}")
        caps = _dict(result.get("agentCapabilities"))

        await self._probe_errors(run)
        session_id, session_result = await self._new_session(run, result)
        if session_id is None:
            return
        second = await run.call("session/new", {"cwd": self.cwd, "mcpServers": []})
        second_id = _dict(second.result).get("sessionId") if second.ok else None
        if not second.ok:
            self.record("session-unique", "fail", f"second session/new: {second.describe()}")
        elif second_id == session_id:
            self.record("session-unique", "fail", f"both calls returned {session_id!r}")
        else:
            self.record("session-unique", "pass")
            run.sessions.add(str(second_id))
        other = str(second_id) if second.ok and second_id != session_id else session_id
        await self._modes_and_config(
            run, other, session_result if other == session_id else second.result
        )
        prompted = await self._prompt(run, session_id)
        await self._cancel(run, session_id)
        await self._load(run, caps, session_id, prompted)
        await self._list(run, caps, [session_id, other])
        await self._unadvertised(run, caps, session_id)

    async def _probe_errors(self, run: _Run) -> None:
        answer = await run.call(UNKNOWN_METHOD, {})
        code = _error_code(answer)
        if code == METHOD_NOT_FOUND:
            self.record("unknown-method", "pass")
        else:
            self.record("unknown-method", "fail", f"{UNKNOWN_METHOD}: {answer.describe()}")

        answer = await run.call(UNKNOWN_EXT_METHOD, {})
        if answer.answered:
            self.record("ext-request", "pass", answer.describe())
        else:
            self.record("ext-request", "fail", answer.describe())
        code = _error_code(answer)
        if code == METHOD_NOT_FOUND:
            self.record("ext-request-code", "pass")
        else:
            self.record("ext-request-code", "fail", f"{UNKNOWN_EXT_METHOD}: {answer.describe()}")

        mark = run.mark()
        await run.notify("_acpwire_check/notice", {"n": 1})
        await run.notify("$/acpwire_check_notice", {})
        ping = await run.ping()
        sent_ids = {
            e.message.get("id") if e.message else None
            for e in run.entries(mark)
            if e.direction == "to_agent"
        }
        stray = [
            e
            for e in run.entries(mark)
            if e.direction == "from_agent"
            and e.is_response
            and (e.message or {}).get("id") not in sent_ids
        ]
        if stray:
            self.record(
                "notification-unanswered",
                "fail",
                f"answered a notification: {_short(stray[0].raw.decode('utf-8', 'replace'), 120)}",
            )
        else:
            self.record("notification-unanswered", "pass")
        if not ping.answered:
            self.record(
                "notifications-ignored", "fail", f"after the notifications: {ping.describe()}"
            )
        elif stray:
            self.record(
                "notifications-ignored", "fail", "answered with an error instead of ignoring"
            )
        else:
            self.record("notifications-ignored", "pass")

        mark = run.mark()
        await run.send_raw(MALFORMED_LINE)
        ping = await run.ping()
        if ping.answered:
            self.record("malformed-line", "pass", "later requests still answered")
        else:
            self.record("malformed-line", "fail", f"after a non-JSON line: {ping.describe()}")
        answers = [
            e.message
            for e in run.entries(mark)
            if e.direction == "from_agent"
            and e.is_response
            and e.message
            and e.message.get("id") in (None, 999)
        ]
        if not answers:
            self.record("malformed-line-error", "pass", "not answered (allowed)")
        else:
            first = answers[0]
            code = _dict(first.get("error")).get("code")
            if code == PARSE_ERROR and first.get("id") is None:
                self.record("malformed-line-error", "pass", "answered -32700")
            else:
                self.record(
                    "malformed-line-error",
                    "fail",
                    f"answered {_short(msgspec.json.encode(first).decode(), 120)}",
                )

    async def _new_session(self, run: _Run, init_result: dict[str, Any]) -> tuple[str | None, Any]:
        params: dict[str, Any] = {"cwd": self.cwd, "mcpServers": []}
        answer = await run.call("session/new", params)
        if _error_code(answer) == AUTH_REQUIRED and self.options.auth_method:
            auth = await run.call("authenticate", {"methodId": self.options.auth_method})
            if not auth.ok:
                self.record("session-new", "skip", f"authenticate failed: {auth.describe()}")
                self.skip_rest("no session (authentication failed)")
                return None, None
            answer = await run.call("session/new", params)
        if _error_code(answer) == AUTH_REQUIRED:
            methods = [str(m.get("id")) for m in _dicts(init_result.get("authMethods") or ())]
            hint = (
                f"; offered methods: {', '.join(methods)}; pass --auth-method ID" if methods else ""
            )
            reason = "needs authentication (session/new answered -32000)"
            self.record("session-new", "skip", reason + hint)
            self.report.notes.append(reason + hint)
            self.skip_rest("no session: the agent needs authentication")
            return None, None
        session_id = _dict(answer.result).get("sessionId") if answer.ok else None
        if not isinstance(session_id, str) or not session_id:
            self.record("session-new", "fail", f"session/new: {answer.describe()}")
            self.skip_rest("no session: session/new failed")
            return None, None
        run.sessions.add(session_id)
        self.record("session-new", "pass", f"sessionId {_short(session_id, 40)}")
        return session_id, answer.result

    async def _modes_and_config(self, run: _Run, session_id: str, result: Any) -> None:
        result = _dict(result)
        modes = _as_dict(result.get("modes"))
        if modes is None:
            self.record("set-mode", "n/a", "no modes offered")
            self.record("mode-state", "n/a", "no modes offered")
        else:
            ids = [m.get("id") for m in _dicts(modes.get("availableModes") or ())]
            current = modes.get("currentModeId")
            if current in ids:
                self.record("mode-state", "pass", f"{current} of {', '.join(map(str, ids))}")
            else:
                self.record("mode-state", "fail", f"currentModeId {current!r} not in {ids!r}")
            target = next((i for i in ids if i != current), current)
            if target is None:
                self.record("set-mode", "skip", "no mode ids offered")
            else:
                answer = await run.call(
                    "session/set_mode", {"sessionId": session_id, "modeId": target}
                )
                if answer.ok and isinstance(answer.result, dict):
                    self.record("set-mode", "pass", f"set {target}")
                else:
                    self.record("set-mode", "fail", f"set_mode {target!r}: {answer.describe()}")
        options = result.get("configOptions")
        if options is None:
            self.record("config-options", "n/a", "no config options offered")
            self.record("set-config-option", "n/a", "no config options offered")
            return
        self.verdict("config-options", _config_problems(options), f"{len(options)} options")
        option_list = _as_list(options)
        if option_list is None:
            self.record("set-config-option", "skip", "configOptions is not a list")
            return
        target_option: dict[str, Any] | None = None
        new_value: Any = None
        for option in _dicts(option_list):
            if option.get("type") == "select":
                others = [v for v in _select_values(option) if v != option.get("currentValue")]
                if others:
                    target_option, new_value = option, others[0]
                    break
        if target_option is None:
            self.record("set-config-option", "skip", "no select option with a second value")
            return
        cid = target_option.get("id")
        answer = await run.call(
            "session/set_config_option",
            {"sessionId": session_id, "configId": cid, "value": new_value},
        )
        if not answer.ok:
            self.record("set-config-option", "fail", f"set {cid}={new_value}: {answer.describe()}")
            return
        returned = _as_list(_dict(answer.result).get("configOptions"))
        if returned is None:
            self.record("set-config-option", "fail", "the result has no configOptions list")
            return
        before = {_dict(o).get("id") for o in option_list}
        after = {_dict(o).get("id"): _dict(o) for o in returned}
        problems = [f"option {i!r} missing from the result" for i in before if i not in after]
        changed = after.get(cid)
        if changed is not None and changed.get("currentValue") != new_value:
            problems.append(
                f"{cid!r} currentValue is {changed.get('currentValue')!r}, expected {new_value!r}"
            )
        self.verdict(
            "set-config-option", problems, f"set {cid}={new_value}, {len(returned)} options back"
        )

    def _text_prompt(self, session_id: str, text: str) -> dict[str, Any]:
        return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}

    async def _prompt(self, run: _Run, session_id: str) -> bool:
        mark = run.mark()
        answer = await run.call(
            "session/prompt", self._text_prompt(session_id, self.options.prompt)
        )
        if not answer.ok:
            self.record("prompt", "fail", f"session/prompt: {answer.describe()}")
            self.record("turn-order", "skip", "the prompt failed")
            return False
        reason = _dict(answer.result).get("stopReason")
        if reason in STOP_REASONS:
            self.record("prompt", "pass", f"stopReason {reason}, {answer.seconds:.1f} s")
        else:
            self.record("prompt", "fail", f"stopReason {reason!r}")
        await self._after_response(run, "turn-order", session_id, mark)
        return True

    async def _after_response(self, run: _Run, key: str, session_id: str, mark: int) -> None:
        """Fail ``key`` if turn content for the session arrives after the prompt response."""
        index = run.response_index(mark, "session/prompt")
        if index is None:
            self.record(key, "skip", "response not found on the wire")
            return
        ping = await run.ping()
        late = run.updates(session_id, index + 1, kinds=TURN_CONTENT_UPDATES)
        if late:
            self.record(
                key, "fail", f"{len(late)} update(s) after the response: {', '.join(late[:3])}"
            )
        elif not ping.answered:
            self.record(key, "skip", f"could not confirm: {ping.describe()}")
        else:
            before = run.updates(session_id, mark, index)
            self.record(key, "pass", f"{len(before)} update(s) before the response")

    async def _cancel(self, run: _Run, session_id: str) -> None:
        if not self.wants("cancel", "cancel-prompt", "after-cancel"):
            return
        slow = self.options.slow_prompt
        if not slow:
            for key in ("cancel", "cancel-prompt", "after-cancel"):
                self.record(key, "skip", "needs --slow-prompt TEXT (a prompt that takes a while)")
            return
        assert run.pipe is not None
        mark = run.mark()
        turn = asyncio.ensure_future(
            run.call("session/prompt", self._text_prompt(session_id, slow))
        )
        started = await run.pipe.wait_for(
            lambda e: (
                (e.session_update() or ("",))[0] == session_id
                or (e.direction == "from_agent" and e.is_response)
            ),
            mark,
            min(TURN_START_WAIT, self.options.timeout),
        )
        if turn.done():
            answer = turn.result()
            self.record(
                "cancel",
                "skip",
                f"the slow prompt ended before it could be cancelled: {answer.describe()}",
            )
            self.record("cancel-prompt", "skip", "the slow prompt was not slow")
            self.record("after-cancel", "skip", "the slow prompt was not slow")
            return
        del started  # the turn is running (or silent): cancel it either way
        cancelled_at = time.monotonic()
        await run.notify("session/cancel", {"sessionId": session_id})
        answer = await turn
        took = time.monotonic() - cancelled_at
        if answer.problem is not None:
            self.record("cancel", "fail", f"after session/cancel: {answer.problem}")
        elif answer.error is not None:
            self.record(
                "cancel", "fail", f"the turn ended with {answer.describe()} (must be a result)"
            )
        else:
            reason = _dict(answer.result).get("stopReason")
            if reason != "cancelled":
                self.record("cancel", "fail", f"stopReason {reason!r} after session/cancel")
            else:
                await self._after_response(run, "cancel", session_id, mark)
        if answer.answered and took <= CANCEL_GRACE:
            self.record("cancel-prompt", "pass", f"answered {took:.2f} s after session/cancel")
        else:
            self.record(
                "cancel-prompt", "fail", f"not answered within {CANCEL_GRACE:g} s of session/cancel"
            )
        if not answer.answered:
            self.record("after-cancel", "skip", "the cancelled turn never ended")
            return
        follow = await run.call(
            "session/prompt", self._text_prompt(session_id, self.options.prompt)
        )
        reason = _dict(follow.result).get("stopReason") if follow.ok else None
        if reason in STOP_REASONS:
            self.record("after-cancel", "pass", f"stopReason {reason}")
        else:
            self.record(
                "after-cancel",
                "fail",
                f"next prompt: {follow.describe() if not follow.ok else reason}",
            )

    async def _load(self, run: _Run, caps: dict[str, Any], session_id: str, prompted: bool) -> None:
        if caps.get("loadSession") is not True:
            self.record("session-load", "n/a", "loadSession not advertised")
            return
        mark = run.mark()
        answer = await run.call(
            "session/load", {"sessionId": session_id, "cwd": self.cwd, "mcpServers": []}
        )
        if not answer.ok:
            self.record("session-load", "fail", f"session/load: {answer.describe()}")
            return
        index = run.response_index(mark, "session/load")
        if index is None:
            self.record("session-load", "skip", "response not found on the wire")
            return
        replayed = run.updates(session_id, mark, index)
        ping = await run.ping()
        late = run.updates(session_id, index + 1, kinds=REPLAY_UPDATES)
        problems: list[str] = []
        if late:
            problems.append(
                f"{len(late)} replayed update(s) after the response: {', '.join(late[:3])}"
            )
        if prompted and not replayed and not late:
            problems.append("nothing replayed for a session with a finished turn")
        if not problems and not ping.answered:
            self.record("session-load", "skip", f"could not confirm: {ping.describe()}")
            return
        self.verdict(
            "session-load", problems, f"{len(replayed)} update(s) replayed before the response"
        )

    async def _list(self, run: _Run, caps: dict[str, Any], session_ids: list[str]) -> None:
        if not isinstance(_dict(caps.get("sessionCapabilities")).get("list"), dict):
            self.record("session-list", "n/a", "sessionCapabilities.list not advertised")
            return
        problems: list[str] = []
        answer = await run.call("session/list", {})
        if not answer.ok:
            self.record("session-list", "fail", f"session/list {{}}: {answer.describe()}")
            return
        if not isinstance(_dict(answer.result).get("sessions"), list):
            problems.append("session/list {} has no sessions array")
        found: dict[str, Any] = {}
        cursor: Any = None
        for _page in range(20):
            params: dict[str, Any] = {"cwd": self.cwd}
            if cursor is not None:
                params["cursor"] = cursor
            page = await run.call("session/list", params)
            if not page.ok:
                problems.append(f"session/list with cwd: {page.describe()}")
                break
            sessions = _as_list(_dict(page.result).get("sessions"))
            if sessions is None:
                problems.append("session/list with cwd has no sessions array")
                break
            for info in map(_dict, sessions):
                found[str(info.get("sessionId"))] = info.get("cwd")
            cursor = _dict(page.result).get("nextCursor")
            if not cursor:
                break
        wrong = {sid: c for sid, c in found.items() if c != self.cwd}
        if wrong:
            problems.append(f"cwd filter returned other folders: {_short(wrong)}")
        missing = [sid for sid in session_ids if sid not in found]
        if missing:
            problems.append(f"sessions created here not listed for their cwd: {', '.join(missing)}")
        nowhere = f"/nonexistent/acp-check-{uuid.uuid4().hex}"
        empty = await run.call("session/list", {"cwd": nowhere})
        if not empty.ok:
            problems.append(f"session/list for an unused cwd: {empty.describe()}")
        elif _dict(empty.result).get("sessions") != []:
            problems.append(
                f"an unused cwd gave sessions={_short(_dict(empty.result).get('sessions'))}"
            )
        self.verdict("session-list", problems, f"{len(found)} session(s) listed for the cwd")

    async def _unadvertised(self, run: _Run, caps: dict[str, Any], session_id: str) -> None:
        session_caps = _dict(caps.get("sessionCapabilities"))
        base: dict[str, Any] = {"sessionId": session_id, "cwd": self.cwd, "mcpServers": []}
        probes: list[tuple[str, dict[str, Any]]] = []
        if caps.get("loadSession") is not True:
            probes.append(("session/load", base))
        if not isinstance(session_caps.get("list"), dict):
            probes.append(("session/list", {}))
        if not isinstance(session_caps.get("resume"), dict):
            probes.append(("session/resume", base))
        if not isinstance(_dict(caps.get("auth")).get("logout"), dict):
            probes.append(("logout", {}))
        if not probes:
            self.record("unadvertised-methods", "n/a", "every optional method probed is advertised")
            return
        problems: list[str] = []
        for method, params in probes:
            answer = await run.call(method, params)
            if answer.ok:
                problems.append(f"{method} succeeded without being advertised")
            elif not answer.answered:
                problems.append(f"{method}: {answer.describe()}")
        self.verdict(
            "unadvertised-methods", problems, f"errors for {', '.join(m for m, _ in probes)}"
        )

    # -- checks over the recording

    def wire_checks(self, schema: dict[str, Any] | None, schema_note: str | None) -> None:
        self._stdout_clean()
        self._schema(schema, schema_note)
        self._responses()
        self._gates()
        self._update_sessions()

    def _stdout_clean(self) -> None:
        bad = 0
        seen: dict[str, list[str]] = {}  # distinct bad line -> runs it appeared in
        for e in self.entries:
            if e.direction != "from_agent":
                continue
            try:
                e.raw.decode("utf-8")
            except UnicodeDecodeError:
                what = f"not UTF-8: {_short(e.raw)}"
            else:
                m = e.message
                if m is not None and m.get("jsonrpc") == "2.0":
                    continue
                what = repr(_short(e.raw.decode("utf-8", "replace"), 60))
            bad += 1
            seen.setdefault(what, []).append(e.run)
        count = sum(1 for e in self.entries if e.direction == "from_agent")
        if bad:
            shown = [f"{what} ({', '.join(runs)})" for what, runs in list(seen.items())[:3]]
            self.record(
                "stdout-clean",
                "fail",
                f"{bad} line(s) on stdout are not JSON-RPC messages: " + "; ".join(shown),
            )
        else:
            self.record("stdout-clean", "pass", f"{count} line(s), all JSON-RPC")

    def _schema(self, schema: dict[str, Any] | None, note: str | None) -> None:
        if schema is None:
            self.record("schema", "skip", note or "no schema")
            return
        from .schema_check import SchemaValidator

        problems: list[str] = []
        checked = 0
        for run in self.runs:
            validator = SchemaValidator(schema)
            for e in run.entries():
                m = e.message
                if m is None:
                    continue  # reported by stdout-clean
                if e.direction == "to_agent":
                    validator.note_request(m)
                    continue
                checked += 1
                try:
                    validator.validate(m)
                except AssertionError as exc:
                    problems.append(f"[{run.label}] {_short(str(exc), 120)}")
                except Exception as exc:  # jsonschema.ValidationError
                    what = m.get("method") or f"response {m.get('id')!r}"
                    path = getattr(exc, "json_path", "")
                    msg = getattr(exc, "message", str(exc))
                    problems.append(f"[{run.label}] {what} {path}: {_short(msg, 120)}")
        self.verdict("schema", problems, f"{checked} message(s) valid")

    def _responses(self) -> None:
        problems: list[str] = []
        for run in self.runs:
            requests: dict[Any, str] = {}
            answers: dict[Any, int] = {}
            for e in run.entries():
                m = e.message
                if m is None:
                    continue
                if e.direction == "to_agent" and "method" in m and "id" in m:
                    requests[(type(m["id"]).__name__, m["id"])] = str(m["method"])
                elif e.direction == "from_agent" and "method" not in m:
                    rid = m.get("id")
                    if rid is None:
                        continue  # answers to unparseable lines: see malformed-line-error
                    key = (type(rid).__name__, rid)
                    if key not in requests:
                        problems.append(f"[{run.label}] response to unknown id {rid!r}")
                        continue
                    answers[key] = answers.get(key, 0) + 1
                    if ("result" in m) == ("error" in m):
                        problems.append(
                            f"[{run.label}] response {rid!r} must have exactly one of result/error"
                        )
                    elif "error" in m:
                        err = _dict(m["error"])
                        code = err.get("code")
                        if (
                            not isinstance(code, int)
                            or isinstance(code, bool)
                            or not isinstance(err.get("message"), str)
                        ):
                            problems.append(f"[{run.label}] malformed error in response {rid!r}")
            for key, method in requests.items():
                n = answers.get(key, 0)
                if n == 0:
                    problems.append(f"[{run.label}] {method} (id {key[1]!r}) never answered")
                elif n > 1:
                    problems.append(f"[{run.label}] {method} (id {key[1]!r}) answered {n} times")
        self.verdict("responses", problems)

    def _gates(self) -> None:
        problems: list[str] = []
        caps = s.convert(CLIENT_CAPABILITIES, s.ClientCapabilities)
        for e in self.entries:
            method = e.method
            if e.direction != "from_agent" or method is None:
                continue
            spec = BY_NAME.get(method)
            if spec is None or spec.gate is None or spec.gate.advertised_by != "client":
                continue
            params = _dict((e.message or {}).get("params"))
            mode = params.get("mode") if isinstance(params.get("mode"), str) else None
            if not gate_allows(spec.gate, caps, mode):
                problems.append(f"[{e.run}] called {method} (needs {spec.gate.path})")
        boolean_ok = False  # the checker never advertises session.configOptions.boolean
        if not boolean_ok:
            for e in self.entries:
                if e.direction != "from_agent":
                    continue
                for option in _walk_config_options(e.value if e.message is not None else None):
                    if _dict(option).get("type") == "boolean":
                        problems.append(
                            f"[{e.run}] boolean config option {_dict(option).get('id')!r} "
                            "offered without session.configOptions.boolean"
                        )
                        break
        self.verdict("capability-gates", problems, "none (client advertised no capabilities)")

    def _update_sessions(self) -> None:
        problems: list[str] = []
        for run in self.runs:
            for e in run.entries():
                su = e.session_update()
                if su is not None and su[0] not in run.sessions:
                    problems.append(f"[{run.label}] session/update for unknown session {su[0]!r}")
        self.verdict("update-sessions", problems)


def _session_folder(cwd: str | None) -> tuple[str | None, str]:
    """(temporary folder to remove afterwards or None, absolute session cwd)."""
    if cwd is not None:
        return None, os.path.abspath(cwd)
    temp = tempfile.mkdtemp(prefix="acp-check-")
    return temp, str(Path(temp).resolve())


async def run_checks(options: CheckOptions) -> Report:
    """Run the checks against ``options.command``; never raises for agent misbehaviour."""
    if not options.command:
        raise ValueError("no agent command")
    started = time.monotonic()
    schema: dict[str, Any] | None = None
    schema_note: str | None = None
    schema_path = find_official_schema(options.schema)
    if schema_path is None:
        schema_note = (
            "official schema not found (install @agentclientprotocol/sdk with npm, set "
            "ACPWIRE_SCHEMA_DIR, or pass --schema PATH)"
        )
    else:
        try:
            importlib.import_module("jsonschema")  # only whether it is installed
        except ImportError:
            schema_note = "schema validation needs jsonschema: pip install jsonschema"
        else:
            from .schema_check import load_official_schema

            schema = load_official_schema(schema_path)
    temp, cwd = _session_folder(options.cwd)
    checker = _Checker(options)
    checker.cwd = cwd
    if schema_path is not None:
        checker.report.notes.append(f"schema: {schema_path}")
    try:
        await asyncio.gather(checker.main_run(), checker.version_probes())
        checker.wire_checks(schema, schema_note)
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    report = checker.report
    report.results = [checker.results[c.key] for c in CHECKS if c.key in checker.results]
    report.duration = time.monotonic() - started
    return report
