"""Checks that drive the agent: each run is one agent process on real pipes.

The main run talks to the agent the way an editor would, through acpwire's client
connection, with no optional client capability; the version probes start their own
processes. Answers are judged as they arrive; everything is recorded (see
:mod:`.wire`) for the wire checks that run afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any

import msgspec

from ... import schema as s
from ...agent.turn import STOP_REASONS
from ...client.connection import Client, ClientSideConnection
from ...protocol.errors import ConnectionClosedError, ErrorCode, RequestError
from ...transports.subprocess import AgentNotFoundError, SubprocessTransport, spawn
from .report import Report, Verdicts
from .wire import RecordingPipe, WireEntry, as_dict, as_list, dict_of, dicts, short

if TYPE_CHECKING:
    from .runner import CheckOptions

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
UNKNOWN_METHOD = "acpwire_check/unknown_method"
UNKNOWN_EXT_METHOD = "_acpwire_check/unknown_request"
PING_METHOD = "acpwire_check/ping"
MALFORMED_LINE = b'{"jsonrpc": "2.0", "id": 999, "method": this is not JSON'


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


class Run:
    """One agent process, driven by a client connection whose wire is recorded."""

    def __init__(self, checker: LiveChecks, label: str) -> None:
        self.checker = checker
        self.label = label
        self.transport: SubprocessTransport | None = None
        self.pipe: RecordingPipe | None = None
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
        self.pipe = RecordingPipe(self.transport, self.label, self.checker.entries)
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


def _select_values(option: dict[str, Any]) -> list[Any]:
    """The values of a select config option (flat or grouped)."""
    values: list[Any] = []
    for item in dicts(option.get("options") or ()):
        if "value" in item:
            values.append(item["value"])
        for sub in dicts(item.get("options") or ()):
            if "value" in sub:
                values.append(sub["value"])
    return values


def _config_problems(options: Any) -> list[str]:
    problems: list[str] = []
    option_list = as_list(options)
    if option_list is None:
        return ["configOptions is not a list"]
    for item in option_list:
        option = as_dict(item)
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


class LiveChecks:
    """The checks that drive agent processes: version probes and the main conversation."""

    def __init__(
        self,
        options: CheckOptions,
        verdicts: Verdicts,
        report: Report,
        entries: list[WireEntry],
        cwd: str,
    ) -> None:
        self.options = options
        self.verdicts = verdicts
        self.report = report
        self.entries = entries
        self.cwd = cwd
        self.runs: list[Run] = []

    def new_run(self, label: str) -> Run:
        run = Run(self, label)
        self.runs.append(run)
        return run

    # -- version probes (own processes)

    async def version_probe(self, version: int, key: str) -> int | None:
        run = self.new_run(f"v{version}")
        try:
            if not await run.start():
                self.verdicts.record(key, "fail", f"agent not started: {run.start_problem}")
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
                self.verdicts.record(
                    key, "fail", f"initialize(protocolVersion={version}): {answer.describe()}"
                )
            else:
                got = dict_of(answer.result).get("protocolVersion")
                if not isinstance(got, bool) and got == 1:
                    self.verdicts.record(key, "pass", f"answered {got}")
                else:
                    self.verdicts.record(
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
        if not self.verdicts.wants("version-newer", "version-unknown", "shutdown"):
            return
        codes = await asyncio.gather(
            self.version_probe(2, "version-newer"), self.version_probe(65535, "version-unknown")
        )
        slow = [c for c in codes if c is None]
        if slow:
            self.verdicts.record(
                "shutdown",
                "fail",
                f"the agent was still running {SHUTDOWN_GRACE:g} s after its stdin was closed",
            )
        else:
            self.verdicts.record(
                "shutdown", "pass", f"exit status {', '.join(str(c) for c in codes)}"
            )

    # -- the main run

    async def main_run(self) -> None:
        run = self.new_run("main")
        try:
            await self._main(run)
        finally:
            await run.close()

    async def _main(self, run: Run) -> None:
        if not await run.start():
            self.verdicts.record("initialize", "fail", f"agent not started: {run.start_problem}")
            self.verdicts.skip_rest("the agent did not start")
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
            self.verdicts.record("initialize", "fail", f"initialize: {init.describe()}")
            self.verdicts.skip_rest("initialize failed")
            return
        result = dict_of(init.result)
        version = result.get("protocolVersion")
        self.report.protocol_version = version
        info = result.get("agentInfo")
        agent_info = self.report.agent_info = as_dict(info)
        if not isinstance(version, bool) and version == 1:
            self.verdicts.record("initialize", "pass", "protocolVersion 1")
        else:
            self.verdicts.record(
                "initialize", "fail", f"asked 1, answered protocolVersion {version!r}"
            )
        if agent_info is not None and agent_info.get("name") and agent_info.get("version"):
            self.verdicts.record(
                "agent-info", "pass", f"{agent_info.get('name')} {agent_info.get('version')}"
            )
        else:
            self.verdicts.record("agent-info", "fail", f"agentInfo is {short(info)}")
        caps = dict_of(result.get("agentCapabilities"))

        await self._probe_errors(run)
        session_id, session_result = await self._new_session(run, result)
        if session_id is None:
            return
        second = await run.call("session/new", {"cwd": self.cwd, "mcpServers": []})
        second_id = dict_of(second.result).get("sessionId") if second.ok else None
        if not second.ok:
            self.verdicts.record(
                "session-unique", "fail", f"second session/new: {second.describe()}"
            )
        elif second_id == session_id:
            self.verdicts.record("session-unique", "fail", f"both calls returned {session_id!r}")
        else:
            self.verdicts.record("session-unique", "pass")
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

    async def _probe_errors(self, run: Run) -> None:
        answer = await run.call(UNKNOWN_METHOD, {})
        code = _error_code(answer)
        if code == ErrorCode.METHOD_NOT_FOUND:
            self.verdicts.record("unknown-method", "pass")
        else:
            self.verdicts.record("unknown-method", "fail", f"{UNKNOWN_METHOD}: {answer.describe()}")

        answer = await run.call(UNKNOWN_EXT_METHOD, {})
        if answer.answered:
            self.verdicts.record("ext-request", "pass", answer.describe())
        else:
            self.verdicts.record("ext-request", "fail", answer.describe())
        code = _error_code(answer)
        if code == ErrorCode.METHOD_NOT_FOUND:
            self.verdicts.record("ext-request-code", "pass")
        else:
            self.verdicts.record(
                "ext-request-code", "fail", f"{UNKNOWN_EXT_METHOD}: {answer.describe()}"
            )

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
            self.verdicts.record(
                "notification-unanswered",
                "fail",
                f"answered a notification: {short(stray[0].raw.decode('utf-8', 'replace'), 120)}",
            )
        else:
            self.verdicts.record("notification-unanswered", "pass")
        if not ping.answered:
            self.verdicts.record(
                "notifications-ignored", "fail", f"after the notifications: {ping.describe()}"
            )
        elif stray:
            self.verdicts.record(
                "notifications-ignored", "fail", "answered with an error instead of ignoring"
            )
        else:
            self.verdicts.record("notifications-ignored", "pass")

        mark = run.mark()
        await run.send_raw(MALFORMED_LINE)
        ping = await run.ping()
        if ping.answered:
            self.verdicts.record("malformed-line", "pass", "later requests still answered")
        else:
            self.verdicts.record(
                "malformed-line", "fail", f"after a non-JSON line: {ping.describe()}"
            )
        answers = [
            e.message
            for e in run.entries(mark)
            if e.direction == "from_agent"
            and e.is_response
            and e.message
            and e.message.get("id") in (None, 999)
        ]
        if not answers:
            self.verdicts.record("malformed-line-error", "pass", "not answered (allowed)")
        else:
            first = answers[0]
            code = dict_of(first.get("error")).get("code")
            if code == ErrorCode.PARSE_ERROR and first.get("id") is None:
                self.verdicts.record("malformed-line-error", "pass", "answered -32700")
            else:
                self.verdicts.record(
                    "malformed-line-error",
                    "fail",
                    f"answered {short(msgspec.json.encode(first).decode(), 120)}",
                )

    async def _new_session(self, run: Run, init_result: dict[str, Any]) -> tuple[str | None, Any]:
        params: dict[str, Any] = {"cwd": self.cwd, "mcpServers": []}
        answer = await run.call("session/new", params)
        if _error_code(answer) == ErrorCode.AUTH_REQUIRED and self.options.auth_method:
            auth = await run.call("authenticate", {"methodId": self.options.auth_method})
            if not auth.ok:
                self.verdicts.record(
                    "session-new", "skip", f"authenticate failed: {auth.describe()}"
                )
                self.verdicts.skip_rest("no session (authentication failed)")
                return None, None
            answer = await run.call("session/new", params)
        if _error_code(answer) == ErrorCode.AUTH_REQUIRED:
            methods = [str(m.get("id")) for m in dicts(init_result.get("authMethods") or ())]
            hint = (
                f"; offered methods: {', '.join(methods)}; pass --auth-method ID" if methods else ""
            )
            reason = "needs authentication (session/new answered -32000)"
            self.verdicts.record("session-new", "skip", reason + hint)
            self.report.notes.append(reason + hint)
            self.verdicts.skip_rest("no session: the agent needs authentication")
            return None, None
        session_id = dict_of(answer.result).get("sessionId") if answer.ok else None
        if not isinstance(session_id, str) or not session_id:
            self.verdicts.record("session-new", "fail", f"session/new: {answer.describe()}")
            self.verdicts.skip_rest("no session: session/new failed")
            return None, None
        run.sessions.add(session_id)
        self.verdicts.record("session-new", "pass", f"sessionId {short(session_id, 40)}")
        return session_id, answer.result

    async def _modes_and_config(self, run: Run, session_id: str, result: Any) -> None:
        result = dict_of(result)
        modes = as_dict(result.get("modes"))
        if modes is None:
            self.verdicts.record("set-mode", "n/a", "no modes offered")
            self.verdicts.record("mode-state", "n/a", "no modes offered")
        else:
            ids = [m.get("id") for m in dicts(modes.get("availableModes") or ())]
            current = modes.get("currentModeId")
            if current in ids:
                self.verdicts.record(
                    "mode-state", "pass", f"{current} of {', '.join(map(str, ids))}"
                )
            else:
                self.verdicts.record(
                    "mode-state", "fail", f"currentModeId {current!r} not in {ids!r}"
                )
            target = next((i for i in ids if i != current), current)
            if target is None:
                self.verdicts.record("set-mode", "skip", "no mode ids offered")
            else:
                answer = await run.call(
                    "session/set_mode", {"sessionId": session_id, "modeId": target}
                )
                if answer.ok and isinstance(answer.result, dict):
                    self.verdicts.record("set-mode", "pass", f"set {target}")
                else:
                    self.verdicts.record(
                        "set-mode", "fail", f"set_mode {target!r}: {answer.describe()}"
                    )
        options = result.get("configOptions")
        if options is None:
            self.verdicts.record("config-options", "n/a", "no config options offered")
            self.verdicts.record("set-config-option", "n/a", "no config options offered")
            return
        self.verdicts.verdict(
            "config-options", _config_problems(options), f"{len(options)} options"
        )
        option_list = as_list(options)
        if option_list is None:
            self.verdicts.record("set-config-option", "skip", "configOptions is not a list")
            return
        target_option: dict[str, Any] | None = None
        new_value: Any = None
        for option in dicts(option_list):
            if option.get("type") == "select":
                others = [v for v in _select_values(option) if v != option.get("currentValue")]
                if others:
                    target_option, new_value = option, others[0]
                    break
        if target_option is None:
            self.verdicts.record(
                "set-config-option", "skip", "no select option with a second value"
            )
            return
        cid = target_option.get("id")
        answer = await run.call(
            "session/set_config_option",
            {"sessionId": session_id, "configId": cid, "value": new_value},
        )
        if not answer.ok:
            self.verdicts.record(
                "set-config-option", "fail", f"set {cid}={new_value}: {answer.describe()}"
            )
            return
        returned = as_list(dict_of(answer.result).get("configOptions"))
        if returned is None:
            self.verdicts.record(
                "set-config-option", "fail", "the result has no configOptions list"
            )
            return
        before = {dict_of(o).get("id") for o in option_list}
        after = {dict_of(o).get("id"): dict_of(o) for o in returned}
        problems = [f"option {i!r} missing from the result" for i in before if i not in after]
        changed = after.get(cid)
        if changed is not None and changed.get("currentValue") != new_value:
            problems.append(
                f"{cid!r} currentValue is {changed.get('currentValue')!r}, expected {new_value!r}"
            )
        self.verdicts.verdict(
            "set-config-option", problems, f"set {cid}={new_value}, {len(returned)} options back"
        )

    def _text_prompt(self, session_id: str, text: str) -> dict[str, Any]:
        return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}

    async def _prompt(self, run: Run, session_id: str) -> bool:
        mark = run.mark()
        answer = await run.call(
            "session/prompt", self._text_prompt(session_id, self.options.prompt)
        )
        if not answer.ok:
            self.verdicts.record("prompt", "fail", f"session/prompt: {answer.describe()}")
            self.verdicts.record("turn-order", "skip", "the prompt failed")
            return False
        reason = dict_of(answer.result).get("stopReason")
        if reason in STOP_REASONS:
            self.verdicts.record("prompt", "pass", f"stopReason {reason}, {answer.seconds:.1f} s")
        else:
            self.verdicts.record("prompt", "fail", f"stopReason {reason!r}")
        await self._after_response(run, "turn-order", session_id, mark)
        return True

    async def _after_response(self, run: Run, key: str, session_id: str, mark: int) -> None:
        """Fail ``key`` if turn content for the session arrives after the prompt response."""
        index = run.response_index(mark, "session/prompt")
        if index is None:
            self.verdicts.record(key, "skip", "response not found on the wire")
            return
        ping = await run.ping()
        late = run.updates(session_id, index + 1, kinds=TURN_CONTENT_UPDATES)
        if late:
            self.verdicts.record(
                key, "fail", f"{len(late)} update(s) after the response: {', '.join(late[:3])}"
            )
        elif not ping.answered:
            self.verdicts.record(key, "skip", f"could not confirm: {ping.describe()}")
        else:
            before = run.updates(session_id, mark, index)
            self.verdicts.record(key, "pass", f"{len(before)} update(s) before the response")

    async def _cancel(self, run: Run, session_id: str) -> None:
        if not self.verdicts.wants("cancel", "cancel-prompt", "after-cancel"):
            return
        slow = self.options.slow_prompt
        if not slow:
            for key in ("cancel", "cancel-prompt", "after-cancel"):
                self.verdicts.record(
                    key, "skip", "needs --slow-prompt TEXT (a prompt that takes a while)"
                )
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
            self.verdicts.record(
                "cancel",
                "skip",
                f"the slow prompt ended before it could be cancelled: {answer.describe()}",
            )
            self.verdicts.record("cancel-prompt", "skip", "the slow prompt was not slow")
            self.verdicts.record("after-cancel", "skip", "the slow prompt was not slow")
            return
        del started  # the turn is running (or silent): cancel it either way
        cancelled_at = time.monotonic()
        await run.notify("session/cancel", {"sessionId": session_id})
        answer = await turn
        took = time.monotonic() - cancelled_at
        if answer.problem is not None:
            self.verdicts.record("cancel", "fail", f"after session/cancel: {answer.problem}")
        elif answer.error is not None:
            self.verdicts.record(
                "cancel", "fail", f"the turn ended with {answer.describe()} (must be a result)"
            )
        else:
            reason = dict_of(answer.result).get("stopReason")
            if reason != "cancelled":
                self.verdicts.record(
                    "cancel", "fail", f"stopReason {reason!r} after session/cancel"
                )
            else:
                await self._after_response(run, "cancel", session_id, mark)
        if answer.answered and took <= CANCEL_GRACE:
            self.verdicts.record(
                "cancel-prompt", "pass", f"answered {took:.2f} s after session/cancel"
            )
        else:
            self.verdicts.record(
                "cancel-prompt", "fail", f"not answered within {CANCEL_GRACE:g} s of session/cancel"
            )
        if not answer.answered:
            self.verdicts.record("after-cancel", "skip", "the cancelled turn never ended")
            return
        follow = await run.call(
            "session/prompt", self._text_prompt(session_id, self.options.prompt)
        )
        reason = dict_of(follow.result).get("stopReason") if follow.ok else None
        if reason in STOP_REASONS:
            self.verdicts.record("after-cancel", "pass", f"stopReason {reason}")
        else:
            self.verdicts.record(
                "after-cancel",
                "fail",
                f"next prompt: {follow.describe() if not follow.ok else reason}",
            )

    async def _load(self, run: Run, caps: dict[str, Any], session_id: str, prompted: bool) -> None:
        if caps.get("loadSession") is not True:
            self.verdicts.record("session-load", "n/a", "loadSession not advertised")
            return
        mark = run.mark()
        answer = await run.call(
            "session/load", {"sessionId": session_id, "cwd": self.cwd, "mcpServers": []}
        )
        if not answer.ok:
            self.verdicts.record("session-load", "fail", f"session/load: {answer.describe()}")
            return
        index = run.response_index(mark, "session/load")
        if index is None:
            self.verdicts.record("session-load", "skip", "response not found on the wire")
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
            self.verdicts.record("session-load", "skip", f"could not confirm: {ping.describe()}")
            return
        self.verdicts.verdict(
            "session-load", problems, f"{len(replayed)} update(s) replayed before the response"
        )

    async def _list(self, run: Run, caps: dict[str, Any], session_ids: list[str]) -> None:
        if not isinstance(dict_of(caps.get("sessionCapabilities")).get("list"), dict):
            self.verdicts.record("session-list", "n/a", "sessionCapabilities.list not advertised")
            return
        problems: list[str] = []
        answer = await run.call("session/list", {})
        if not answer.ok:
            self.verdicts.record("session-list", "fail", f"session/list {{}}: {answer.describe()}")
            return
        if not isinstance(dict_of(answer.result).get("sessions"), list):
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
            sessions = as_list(dict_of(page.result).get("sessions"))
            if sessions is None:
                problems.append("session/list with cwd has no sessions array")
                break
            for info in map(dict_of, sessions):
                found[str(info.get("sessionId"))] = info.get("cwd")
            cursor = dict_of(page.result).get("nextCursor")
            if not cursor:
                break
        wrong = {sid: c for sid, c in found.items() if c != self.cwd}
        if wrong:
            problems.append(f"cwd filter returned other folders: {short(wrong)}")
        missing = [sid for sid in session_ids if sid not in found]
        if missing:
            problems.append(f"sessions created here not listed for their cwd: {', '.join(missing)}")
        nowhere = f"/nonexistent/acp-check-{uuid.uuid4().hex}"
        empty = await run.call("session/list", {"cwd": nowhere})
        if not empty.ok:
            problems.append(f"session/list for an unused cwd: {empty.describe()}")
        elif dict_of(empty.result).get("sessions") != []:
            problems.append(
                f"an unused cwd gave sessions={short(dict_of(empty.result).get('sessions'))}"
            )
        self.verdicts.verdict(
            "session-list", problems, f"{len(found)} session(s) listed for the cwd"
        )

    async def _unadvertised(self, run: Run, caps: dict[str, Any], session_id: str) -> None:
        session_caps = dict_of(caps.get("sessionCapabilities"))
        base: dict[str, Any] = {"sessionId": session_id, "cwd": self.cwd, "mcpServers": []}
        probes: list[tuple[str, dict[str, Any]]] = []
        if caps.get("loadSession") is not True:
            probes.append(("session/load", base))
        if not isinstance(session_caps.get("list"), dict):
            probes.append(("session/list", {}))
        if not isinstance(session_caps.get("resume"), dict):
            probes.append(("session/resume", base))
        if not isinstance(dict_of(caps.get("auth")).get("logout"), dict):
            probes.append(("logout", {}))
        if not probes:
            self.verdicts.record(
                "unadvertised-methods", "n/a", "every optional method probed is advertised"
            )
            return
        problems: list[str] = []
        for method, params in probes:
            answer = await run.call(method, params)
            if answer.ok:
                problems.append(f"{method} succeeded without being advertised")
            elif not answer.answered:
                problems.append(f"{method}: {answer.describe()}")
        self.verdicts.verdict(
            "unadvertised-methods", problems, f"errors for {', '.join(m for m, _ in probes)}"
        )

    # -- checks over the recording
