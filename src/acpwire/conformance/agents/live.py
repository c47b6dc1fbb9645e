"""Checks that drive agent processes and judge their answers as they come.

Three kinds of process run side by side (each its own :class:`~.driver.Run`):

* **probes**, short-lived: ``initialize`` asking for version 2, for 65535, and with
  ``_meta`` in the client capabilities; then stdin is closed and the exit awaited.
* **main**, a client that advertises nothing optional and rejects every permission:
  JSON-RPC behaviour (unknown methods, string ids, notifications, a line that is not
  JSON, invalid params, ``$/cancel_request``), sessions, prompt turns and their content,
  cancellation, modes, config options and the optional session methods.
* **full**, a client with every capability that grants permissions: an MCP server in
  ``session/new``, the ``--tool-prompt`` turns (files, terminals, permissions granted) and,
  with ``--slow-prompt``, the end of input during a running turn.

Judgements follow the rule they cite and nothing stricter: an agent may answer version 2
to 65535 and refuse v1-shaped params for version 2; a turn that ended before the cancel
reached the agent is not a cancellation failure; a session that was never prompted need
not be listed. A request whose answer never comes costs one timeout, and the agent that
dies is started again, so one defect gives one failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from ..agent.turn import STOP_REASONS
from ..protocol.errors import ErrorCode
from ..protocol.version import V2_DRAFT, answered_version, v1_shaped
from .driver import (
    BARE_CAPABILITIES,
    FULL_CAPABILITIES,
    Answer,
    BareClient,
    FullClient,
    Opener,
    Run,
)
from .options import CheckOptions
from .registry import CHECKS, Status
from .report import Report, Verdicts
from .wire import Wire, WireEntry, as_dict, as_list, dict_of, dicts, short

__all__ = ["LiveChecks", "TURN_CONTENT_UPDATES"]

TURN_CONTENT_UPDATES = frozenset(
    {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
)
"""Update kinds that belong to a turn (metadata updates may come at any time)."""
REPLAY_UPDATES = TURN_CONTENT_UPDATES | {"user_message_chunk"}
"""Update kinds a session/load replay is made of."""
LATE_WATCH = 0.5
"""Seconds to watch for turn content after a turn's response (at least 0.5 s)."""
CROSSING = 0.1
"""When the agent answers nothing after ``session/cancel``: a turn answered this soon after the
cancel was sent is taken to have ended before the agent read it."""
TURN_START_WAIT = 5.0
"""How long to wait for a slow turn's first content (a message, thought, tool call or plan;
metadata updates such as available commands may come from the session, not the turn)
before cancelling it anyway."""
KNOWN_VERSIONS = frozenset({1, 2})
"""ACP versions that exist: 1 (stable) and 2 (the draft the protocol repository publishes)."""
UNKNOWN_METHOD = "acpwire_check/unknown_method"
UNKNOWN_EXT_METHOD = "_acpwire_check/unknown_request"
MALFORMED_LINE = b'{"jsonrpc": "2.0", "id": 999, "method": this is not JSON'
META = {"acp-check/probe": {"nested": [1, 2]}}
"""A ``_meta`` value the agent has never seen (EXT-008: it must be tolerated)."""
NO_SESSION = "acp-check-no-such-session"
INVALID_CURSOR = "acp-check-invalid-cursor"
UNKNOWN_ID = "acp-check-unknown-id"
# A 1x1 PNG and 2 ms of silence as WAV: tiny but valid image and audio.
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
WAV_SILENCE = "UklGRkQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YSAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="
TURN_CHECKS = tuple(c.key for c in CHECKS if "turn" in c.needs and c.stage == "main")


def _content_blocks(text: str, root: str) -> dict[str, dict[str, Any]]:
    """One block of each type that needs a prompt capability, by capability name."""
    uri = Path(root, "acp-check-note.txt").as_uri()
    return {
        "image": {"type": "image", "mimeType": "image/png", "data": PNG_1X1},
        "audio": {"type": "audio", "mimeType": "audio/wav", "data": WAV_SILENCE},
        "embeddedContext": {
            "type": "resource",
            "resource": {"uri": uri, "mimeType": "text/plain", "text": text},
        },
    }


def select_values(option: dict[str, Any]) -> list[Any]:
    """The values of a select config option (flat or grouped)."""
    values: list[Any] = []
    for item in dicts(option.get("options") or ()):
        if "value" in item:
            values.append(item["value"])
        for sub in dicts(item.get("options") or ()):
            if "value" in sub:
                values.append(sub["value"])
    return values


class LiveChecks:
    """The probe, main and full runs of one ``acp check``."""

    def __init__(
        self,
        options: CheckOptions,
        verdicts: Verdicts,
        report: Report,
        wire: Wire,
        cwd: str,
        full_cwd: str,
    ) -> None:
        self.options = options
        self.verdicts = verdicts
        self.report = report
        self.wire = wire
        self.cwd = cwd
        self.full_cwd = full_cwd
        self.exits: list[tuple[str, int | None]] = []
        """(when stdin was closed, exit status or None when still running) per process."""
        self.working_session: dict[str, str] = {}
        """Per process label, the session the main run's steps work in."""
        self.probe_answers: dict[int, Answer] = {}
        self.meta_answer: Answer | None = None
        self.initialize_answered = False
        """Whether the main run's initialize got any answer (a result or an error)."""
        self.prompt_refused = False
        """The first ``--prompt`` was answered with an error (so later ones are not judged)."""
        self.cancel_request_problems: list[str] | None = None
        """What the quick ``$/cancel_request`` probe found (None: it did not run)."""
        self.opener: Opener | None = None
        """Set when the agent is behind an endpoint: how each run connects to it."""
        self.auth_methods: dict[str, str] = {}
        """Auth method ids offered in any initialize answer, and their types."""
        self.blocked_at: str | None = None
        """The request that first answered -32000 (the main run's if it did)."""

    # -- plumbing

    @property
    def timeout(self) -> float:
        return self.options.timeout

    @property
    def quick(self) -> float:
        return min(self.options.quick_timeout, self.options.timeout)

    @property
    def turn_start_wait(self) -> float:
        return min(TURN_START_WAIT, self.timeout)

    @property
    def grace(self) -> float:
        return self.options.grace

    def record(self, key: str, status: Status, detail: str = "") -> None:
        self.verdicts.record(key, status, detail)

    def fail(self, key: str, detail: str, *broken: str) -> None:
        self.verdicts.fail(key, detail, *broken)

    def skip(self, keys: tuple[str, ...] | list[str], reason: str) -> None:
        for key in keys:
            self.verdicts.record(key, "skip", reason)

    def new_run(self, name: str, full: bool = False) -> Run:
        root = self.full_cwd if full else self.cwd
        return Run(
            name,
            self.wire,
            self.options.command,
            self.options.env,
            (lambda: FullClient(root)) if full else BareClient,
            FULL_CAPABILITIES if full else BARE_CAPABILITIES,
            self.quick,
            self.opener,
        )

    def note_auth_methods(self, init_result: Any) -> None:
        """Remember the auth methods an ``initialize`` answer offers (each run's client
        may be offered others: terminal methods go only to clients with auth.terminal)."""
        for method in dicts(dict_of(init_result).get("authMethods") or ()):
            kind = method.get("type")
            self.auth_methods.setdefault(str(method.get("id")), str(kind or "agent"))

    def auth_hint(self) -> str:
        """The auth methods offered, for a report blocked by authentication."""
        if not self.auth_methods:
            return "the agent offers no auth methods"
        shown = ", ".join(
            name if kind == "agent" else f"{name} ({kind})"
            for name, kind in self.auth_methods.items()
        )
        how = "; pass --auth-method ID" if "agent" in self.auth_methods.values() else ""
        return f"offered methods: {shown}{how}"

    def blocked(self, where: str) -> str:
        """Record that ``where`` answered -32000; the reason to skip what needs it."""
        if self.blocked_at is None or ("full run" in self.blocked_at and "full run" not in where):
            self.blocked_at = where  # the main run's says more
        self.report.blocked = self.blocked_reason()
        return self.report.blocked

    def blocked_reason(self) -> str:
        return f"blocked by authentication: {self.blocked_at} answered -32000; {self.auth_hint()}"

    def finish(self) -> None:
        """Once every run is over: the report's blocked reason names every method offered."""
        if self.blocked_at is not None:
            self.report.blocked = self.blocked_reason()

    async def ready(self, run: Run) -> str | None:
        """The session the main steps work in, after reviving a dead process; None if none."""
        if not run.alive:
            if not await run.revive("it had died", self.timeout):
                return None
        sid = self.working_session.get(run.label)
        if sid is None:
            answer = await run.call(
                "session/new", {"cwd": self.cwd, "mcpServers": []}, self.timeout
            )
            found = dict_of(answer.result).get("sessionId")
            if not isinstance(found, str):
                return None
            sid = self.working_session[run.label] = found
            run.sessions.add(found)
        return sid

    async def fresh_session(self, run: Run) -> str | None:
        """A new session for one check, so one broken turn does not spoil the next check's."""
        if await self.ready(run) is None:
            return None
        answer = await run.call("session/new", {"cwd": self.cwd, "mcpServers": []}, self.timeout)
        sid = dict_of(answer.result).get("sessionId")
        if not isinstance(sid, str):
            return None
        run.sessions.add(sid)
        return sid

    def text_prompt(self, session_id: str, text: str, *extra: dict[str, Any]) -> dict[str, Any]:
        return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}, *extra]}

    async def call_authenticated(self, run: Run, method: str, params: Any) -> Answer:
        """``method``, again after ``authenticate`` when it needs authentication and we may."""
        answer = await run.call(method, params, self.timeout)
        if answer.needs_auth and self.options.auth_method:
            auth = await run.call(
                "authenticate", {"methodId": self.options.auth_method}, self.timeout
            )
            if auth.ok:
                return await run.call(method, params, self.timeout)
            note = f"authenticate {self.options.auth_method!r}: {auth.describe()}"
            if note not in self.report.notes:
                self.report.notes.append(note)
        return answer

    async def prompt(self, run: Run, session_id: str, *extra: dict[str, Any]) -> Answer:
        """A ``--prompt`` turn (authenticating first if the agent asks and we may)."""
        params = self.text_prompt(session_id, self.options.prompt, *extra)
        return await self.call_authenticated(run, "session/prompt", params)

    async def late_updates(self, run: Run, session_id: str, response_index: int) -> list[str]:
        """Turn content for ``session_id`` after ``response_index``, watched for LATE_WATCH s."""
        await asyncio.sleep(LATE_WATCH)  # the rule is about time: watch a window, then look
        return run.updates(session_id, response_index + 1, kinds=TURN_CONTENT_UPDATES)

    # -- probes

    async def probes(self) -> None:
        """Version negotiation and ``_meta`` in capabilities, each in a process of its own."""
        if not self.verdicts.wants(
            "version-newer", "version-unknown", "version-draft", "shutdown", "meta-accepted"
        ):
            return
        await asyncio.gather(self._probe(2), self._probe(65535), self._probe(1, meta=True))

    def judge_probes(self) -> None:
        """Version negotiation and ``_meta``, once the main run has shown whether
        initialize works at all.

        An agent that answers no initialize is one failure (``initialize``), not three.
        """
        newer, unknown = self.probe_answers.get(2), self.probe_answers.get(65535)
        meta = self.meta_answer
        if not self.initialize_answered:
            probes = (
                ("version-unknown", unknown),
                ("version-draft", unknown),
                ("version-newer", newer),
                ("meta-accepted", meta),
            )
            for key, answer in probes:
                if answer is not None and not answer.answered:
                    self.record(key, "skip", "initialize itself is not answered (see initialize)")
            if unknown is not None and not unknown.answered:
                unknown = None
            if newer is not None and not newer.answered:
                newer = None
            if meta is not None and not meta.answered:
                meta = None
        if meta is not None and not meta.answered:
            # Outweighs a pass from the prompt that carried _meta, judged earlier.
            self._fail_meta(meta, overrule=True)
        latest = dict_of(unknown.result).get("protocolVersion") if unknown and unknown.ok else None
        if unknown is not None:
            self._judge_unknown(unknown)
        if newer is not None:
            self._judge_newer(newer, latest)

    def _fail_meta(self, answer: Answer, overrule: bool = False) -> None:
        detail = f"initialize with _meta in clientCapabilities: {answer.describe()}"
        if overrule:
            self.verdicts.overrule("meta-accepted", detail)
        else:
            self.fail("meta-accepted", detail)

    async def _probe(self, version: int, meta: bool = False) -> None:
        run = self.new_run("meta" if meta else f"v{version}")
        try:
            if not await run.start():
                return
            if meta:
                run.capabilities = {"_meta": META}
                run.process.capabilities = run.capabilities
            answer = await run.initialize(version, self.timeout)
            if meta:
                self.meta_answer = answer
                if answer.answered and not answer.ok:  # silence is judged in judge_probes
                    self._fail_meta(answer)
            else:
                self.probe_answers[version] = answer
            if answer.answered and not run.remote:
                code = await run.close_stdin_and_wait(self.grace)
                self.exits.append((f"after initialize ({run.label})", code))
        finally:
            self.report.notes.extend(run.notes)
            await run.close()

    def _judge_unknown(self, answer: Answer) -> None:
        key = "version-unknown"
        if not answer.ok:
            self.fail(key, f"initialize(protocolVersion=65535): {answer.describe()}")
            self.record("version-draft", "skip", "no answer to judge (see version-unknown)")
            return
        if answered_version(answer.result) == V2_DRAFT and not v1_shaped(answer.result):
            self.fail(
                "version-draft",
                "asked 65535, answered 2 in the v2 draft's shape (info, capabilities): a v1 "
                "client asking for a later version than it speaks cannot read that; the draft "
                "is for clients that ask for 2",
            )
        else:
            self.record("version-draft", "pass", "not the v2 draft")
        got = dict_of(answer.result).get("protocolVersion")
        if not isinstance(got, int) or isinstance(got, bool):
            self.record(key, "skip", f"protocolVersion {got!r} is not an integer (see initialize)")
        elif got in KNOWN_VERSIONS:
            self.record(key, "pass", f"answered {got}")
        else:
            self.fail(
                key,
                f"asked 65535, answered {got!r}: the answer must be the newest version the "
                f"agent supports, one of {sorted(KNOWN_VERSIONS)}",
            )

    def _judge_newer(self, answer: Answer, latest: Any) -> None:
        key = "version-newer"
        if not answer.ok:
            if latest == 2:
                self.record(
                    key,
                    "pass",
                    f"refused ({answer.describe()}); it speaks version 2, whose initialize "
                    "params differ from version 1's",
                )
            else:
                self.fail(key, f"initialize(protocolVersion=2): {answer.describe()}")
            return
        got = dict_of(answer.result).get("protocolVersion")
        if not isinstance(got, int) or isinstance(got, bool):
            self.record(key, "skip", f"protocolVersion {got!r} is not an integer (see initialize)")
        elif got == 2:
            self.record(key, "pass", "answered 2 (supports version 2)")
        elif got == 1:
            if latest == 2:
                self.fail(key, "asked 2, answered 1, yet answered 2 when asked for 65535")
            else:
                self.record(key, "pass", "answered 1")
        else:
            self.fail(key, f"asked 2, answered {got!r}")

    def judge_shutdown(self) -> None:
        """SHUT-001 over every process whose stdin was closed outside a turn."""
        if not self.exits:
            self.record("shutdown", "skip", "no process got that far")
            return
        slow = [when for when, code in self.exits if code is None]
        if slow:
            self.fail(
                "shutdown",
                f"still running {self.grace:g} s after stdin closed: {', '.join(slow)}",
            )
        else:
            codes = ", ".join(str(code) for _, code in self.exits)
            self.record("shutdown", "pass", f"exit status {codes}")

    # -- the main run

    async def main(self) -> None:
        run = self.new_run("main")
        try:
            await self._main(run)
        finally:
            self.report.notes.extend(run.notes)
            await run.close()

    async def _main(self, run: Run) -> None:
        if not await run.start():
            self.fail("initialize", f"agent not started: {run.start_problem}")
            self.verdicts.skip_stage("main", "the agent did not start")
            return
        init = await run.initialize(timeout=self.timeout)
        self.initialize_answered = init.answered
        if not init.ok:
            self.fail("initialize", f"initialize: {init.describe()}")
            self.verdicts.skip_stage("main", "initialize failed")
            return
        result = dict_of(init.result)
        self.note_auth_methods(result)
        self._judge_initialize(result)
        caps = dict_of(result.get("agentCapabilities"))
        await self._json_rpc(run)
        await self._unknown_session(run)
        session_id = await self._first_session(run)
        if session_id is None:
            return
        await self._session_probes(run)
        await self._second_session(run, session_id)
        prompted = await self._prompt(run, session_id)
        if prompted is not None:
            await self._turn_followups(run, caps)
        await self._cancel(run)
        await self._request_during_turn(run)
        await self._cancel_request_turn(run)
        await self._load(run, caps, prompted)
        await self._list(run, caps, prompted)
        await self._unadvertised(run, caps)
        if run.alive and not run.remote:
            code = await run.close_stdin_and_wait(self.grace)
            self.exits.append(("with sessions open (main)", code))

    def _judge_initialize(self, result: dict[str, Any]) -> None:
        version = result.get("protocolVersion")
        self.report.protocol_version = version
        info = result.get("agentInfo")
        agent_info = self.report.agent_info = as_dict(info)
        if not isinstance(version, int) or isinstance(version, bool):
            self.fail("initialize", f"protocolVersion is {version!r}, not an integer", "INIT-003")
        elif version != 1:
            self.fail("initialize", f"asked 1, answered protocolVersion {version}", "INIT-008")
        else:
            self.record("initialize", "pass", "protocolVersion 1")
        if info is None:
            self.fail("agent-info", "no agentInfo in the initialize result")
        elif agent_info and isinstance(agent_info.get("name"), str) and agent_info.get("version"):
            self.record("agent-info", "pass", f"{agent_info['name']} {agent_info['version']}")
        else:
            self.record("agent-info", "skip", f"agentInfo is malformed (see schema): {short(info)}")
        terminal = [
            str(m.get("id"))
            for m in dicts(result.get("authMethods") or ())
            if m.get("type") == "terminal"
        ]
        if terminal:
            self.fail(
                "auth-methods",
                f"terminal auth methods {', '.join(terminal)} offered to a client without "
                "auth.terminal",
            )
        else:
            self.record("auth-methods", "pass")

    async def _json_rpc(self, run: Run) -> None:
        """Unknown methods, string ids, notifications, a non-JSON line, invalid params."""
        answer = await run.call(UNKNOWN_METHOD, {}, self.quick, owner="unknown-method")
        run.ping_works = answer.answered
        if answer.code == ErrorCode.METHOD_NOT_FOUND:
            self.record("unknown-method", "pass")
        else:
            self.fail("unknown-method", f"{UNKNOWN_METHOD}: {answer.describe()}")
        if not run.alive and not await self.ready(run):
            return self.verdicts.skip_stage("main", "the agent could not be started again")

        answer = await run.call(UNKNOWN_EXT_METHOD, {}, self.quick, owner="ext-request")
        if answer.answered:
            self.record("ext-request", "pass", answer.describe())
            if answer.code == ErrorCode.METHOD_NOT_FOUND:
                self.record("ext-request-code", "pass")
            else:
                self.fail("ext-request-code", f"{UNKNOWN_EXT_METHOD}: {answer.describe()}")
        else:
            self.fail("ext-request", answer.describe())
            self.record("ext-request-code", "skip", "not answered (see ext-request)")
        for key, method in (
            ("ext-notification", "_acpwire_check/notice"),
            ("protocol-notification", "$/acpwire_check_notice"),
        ):
            if not run.alive and not await self.ready(run):
                return self.verdicts.skip_stage("main", "the agent could not be started again")
            await run.notify(method, {"n": 1})
            ping = await run.ping(self.cwd)
            if ping.answered:
                self.record(key, "pass", "later requests still answered")
            else:
                self.fail(key, f"after {method}: {ping.describe()}")
        await self._malformed_line(run)

    async def _session_probes(self, run: Run) -> None:
        """Requests to session/new that a working session/new answers in a particular way."""
        await self._string_ids(run)
        await self._invalid_params(run)
        await self._cancel_request_quick(run)
        await self._relative_cwd(run)

    async def _string_ids(self, run: Run) -> None:
        if not run.alive and not await self.ready(run):
            return
        request_id, mark = await run.raw_request(
            "session/new", {"cwd": self.cwd, "mcpServers": []}, "string-ids"
        )
        reply = await run.wait_answer(request_id, mark, self.timeout)
        if reply is None:
            self.fail("string-ids", f"session/new with id {request_id!r} never answered")
            return
        sid = dict_of((reply.message or {}).get("result")).get("sessionId")
        if isinstance(sid, str):
            run.sessions.add(sid)
        got = (reply.message or {}).get("id")
        if got == request_id:
            self.record("string-ids", "pass", f"id {request_id!r} echoed")
        else:
            self.fail("string-ids", f"request id {request_id!r} answered with id {got!r}")

    async def _malformed_line(self, run: Run) -> None:
        if not run.alive and not await self.ready(run):
            return
        mark = run.mark()
        await run.send_raw(MALFORMED_LINE)
        ping = await run.ping(self.cwd)
        # What the agent wrote in reply to the line: a response with id null, no id, 999,
        # or one repeating the id of a request it already answered.
        answered_before = {
            str((e.message or {}).get("id"))
            for e in self.wire.of(run.label, 0, mark)
            if e.is_response
        }
        replies = [
            e
            for e in self.wire.of(run.label, mark)
            if e.is_response
            and self.wire.owner(e) is None
            and (
                (e.message or {}).get("id") is None
                or (e.message or {}).get("id") == 999
                or str((e.message or {}).get("id")) in answered_before
            )
        ]
        for e in replies:
            e.owner = "malformed-line-error"
        if ping.answered:
            self.record("malformed-line", "pass", "later requests still answered")
        else:
            self.fail("malformed-line", f"after a non-JSON line: {ping.describe()}")
        if not replies:
            self.record("malformed-line-error", "pass", "not answered (allowed)")
            return
        first = replies[0].message or {}
        code = dict_of(first.get("error")).get("code")
        shown = f"answered {short(replies[0].raw.decode('utf-8', 'replace'), 120)}"
        if "id" not in first or first["id"] is not None:
            # JSON-RPC: an id that could not be read is answered with id null, never a guess.
            self.fail("malformed-line-error", f"{shown}: the id must be null", "JSONRPC-001")
        elif code != ErrorCode.PARSE_ERROR:
            self.fail("malformed-line-error", f"{shown}: the code should be -32700", "RPC-010")
        else:
            self.record("malformed-line-error", "pass", "answered -32700 with id null")

    async def _invalid_params(self, run: Run) -> None:
        if not run.alive and not await self.ready(run):
            return
        answer = await run.call(
            "session/new", {"cwd": 42, "mcpServers": []}, self.quick, owner="invalid-params"
        )
        if answer.error is not None:
            self.record("invalid-params", "pass", answer.describe())
            if answer.code == ErrorCode.INVALID_PARAMS:
                self.record("invalid-params-code", "pass")
            else:
                self.fail("invalid-params-code", f"session/new with cwd 42: {answer.describe()}")
            return
        if answer.ok:
            sid = dict_of(answer.result).get("sessionId")
            if isinstance(sid, str):
                run.sessions.add(sid)
            self.fail("invalid-params", "session/new with cwd 42 succeeded")
        else:
            self.fail("invalid-params", f"session/new with cwd 42: {answer.describe()}")
        self.record("invalid-params-code", "skip", "no error to judge (see invalid-params)")

    async def _cancel_request_quick(self, run: Run) -> None:
        """``$/cancel_request`` right after a request: whatever happens, one answer."""
        if not run.alive and not await self.ready(run):
            return
        request_id, mark = await run.raw_request(
            "session/new", {"cwd": self.cwd, "mcpServers": []}, "cancel-request"
        )
        await run.notify("$/cancel_request", {"requestId": request_id})
        first = await run.wait_answer(request_id, mark, self.timeout)
        if first is not None:
            sid = dict_of((first.message or {}).get("result")).get("sessionId")
            if isinstance(sid, str):
                run.sessions.add(sid)
        self.cancel_request_problems = await self._one_answer(run, request_id, mark)

    async def _one_answer(self, run: Run, request_id: str, mark: int) -> list[str]:
        """Problems with the answers to a cancelled request, watched for LATE_WATCH s more."""
        if not run.raw_answers(request_id, mark):
            return [f"request {request_id!r} never answered after $/cancel_request"]
        await asyncio.sleep(LATE_WATCH)  # a second answer would come now
        answers = run.raw_answers(request_id, mark)
        if len(answers) > 1:
            return [f"request {request_id!r} answered {len(answers)} times after $/cancel_request"]
        return []

    async def _relative_cwd(self, run: Run) -> None:
        if not run.alive and not await self.ready(run):
            return
        answer = await run.call(
            "session/new",
            {"cwd": "relative/dir", "mcpServers": []},
            self.timeout,
            owner="relative-cwd",
        )
        if answer.error is not None:
            self.record("relative-cwd", "pass", answer.describe())
        elif answer.ok:
            sid = dict_of(answer.result).get("sessionId")
            if isinstance(sid, str):
                run.sessions.add(sid)
            self.fail("relative-cwd", "session/new with cwd 'relative/dir' succeeded")
        else:
            self.fail("relative-cwd", answer.describe())

    async def _unknown_session(self, run: Run) -> None:
        if not run.alive and not await run.revive("it had died", self.timeout):
            return
        run.process.provoked.add(NO_SESSION)
        answer = await run.call(
            "session/prompt",
            self.text_prompt(NO_SESSION, self.options.prompt),
            self.timeout,
            owner="unknown-session",
        )
        if answer.error is not None:
            self.record("unknown-session", "pass", answer.describe())
        else:
            self.fail("unknown-session", f"a prompt for {NO_SESSION!r}: {answer.describe()}")

    async def _first_session(self, run: Run) -> str | None:
        if not run.alive and not await run.revive("it had died", self.timeout):
            self.verdicts.skip_stage("main", "the agent could not be started again")
            return None
        params: dict[str, Any] = {"cwd": self.cwd, "mcpServers": []}
        answer = await self.call_authenticated(run, "session/new", params)
        if answer.needs_auth:
            reason = self.blocked("session/new")
            self.verdicts.skip_stage("main", reason)
            return None
        session_id = dict_of(answer.result).get("sessionId") if answer.ok else None
        if not isinstance(session_id, str) or not session_id:
            self.fail("session-new", f"session/new: {answer.describe()}")
            self.verdicts.skip_stage("main", "no session: session/new failed")
            return None
        run.sessions.add(session_id)
        self.working_session[run.label] = session_id
        self.record("session-new", "pass", f"sessionId {short(session_id, 40)}")
        return session_id

    async def _second_session(self, run: Run, session_id: str) -> None:
        second = await run.call("session/new", {"cwd": self.cwd, "mcpServers": []}, self.timeout)
        second_id = dict_of(second.result).get("sessionId") if second.ok else None
        if not isinstance(second_id, str):
            self.fail("session-unique", f"second session/new: {second.describe()}")
            other, result = session_id, None
        elif second_id == session_id:
            self.fail("session-unique", f"both calls returned {session_id!r}")
            other, result = session_id, second.result
        else:
            self.record("session-unique", "pass")
            run.sessions.add(second_id)
            other, result = second_id, second.result
        if result is None:
            self.skip(
                (
                    "mode-state",
                    "set-mode",
                    "unknown-mode",
                    "config-options",
                    "set-config-option",
                    "unknown-config",
                ),
                "no second session",
            )
            return
        await self._modes(run, other, dict_of(result))
        await self._config(run, other, dict_of(result))

    async def _modes(self, run: Run, session_id: str, result: dict[str, Any]) -> None:
        keys = ("mode-state", "set-mode", "unknown-mode")
        modes = as_dict(result.get("modes"))
        if modes is None:
            return self.verdicts_na(keys, "no modes offered")
        ids = [m.get("id") for m in dicts(modes.get("availableModes") or ())]
        current = modes.get("currentModeId")
        if current in ids:
            self.record("mode-state", "pass", f"{current} of {', '.join(map(str, ids))}")
        else:
            self.fail("mode-state", f"currentModeId {current!r} not in {ids!r}")
        target = next((i for i in ids if i != current), current)
        if target is None:
            self.record("set-mode", "skip", "no mode ids offered")
        else:
            answer = await run.call(
                "session/set_mode", {"sessionId": session_id, "modeId": target}, self.timeout
            )
            if answer.ok:
                self.record("set-mode", "pass", f"set {target}")
            else:
                self.fail("set-mode", f"set_mode {target!r}: {answer.describe()}")
        answer = await run.call(
            "session/set_mode",
            {"sessionId": session_id, "modeId": UNKNOWN_ID},
            self.timeout,
            owner="unknown-mode",
        )
        if answer.error is not None:
            self.record("unknown-mode", "pass", answer.describe())
        else:
            self.fail("unknown-mode", f"set_mode {UNKNOWN_ID!r}: {answer.describe()}")

    def verdicts_na(self, keys: tuple[str, ...], reason: str) -> None:
        for key in keys:
            self.record(key, "n/a", reason)

    async def _config(self, run: Run, session_id: str, result: dict[str, Any]) -> None:
        keys = ("config-options", "set-config-option", "unknown-config")
        option_list = as_list(result.get("configOptions"))
        if option_list is None:
            return self.verdicts_na(keys, "no config options offered")
        problems: list[str] = []
        for option in dicts(option_list):
            if option.get("type") == "select" and "currentValue" in option:
                values = select_values(option)
                if option["currentValue"] not in values:
                    problems.append(
                        f"option {option.get('id')!r}: currentValue {option['currentValue']!r} "
                        f"is not one of {values!r}"
                    )
        self.verdicts.verdict("config-options", problems, f"{len(option_list)} options")
        target: dict[str, Any] | None = None
        new_value: Any = None
        for option in dicts(option_list):
            if option.get("type") == "select":
                others = [v for v in select_values(option) if v != option.get("currentValue")]
                if others:
                    target, new_value = option, others[0]
                    break
        if target is None:
            self.record("set-config-option", "skip", "no select option with a second value")
        else:
            cid = target.get("id")
            answer = await run.call(
                "session/set_config_option",
                {"sessionId": session_id, "configId": cid, "value": new_value},
                self.timeout,
            )
            returned = as_list(dict_of(answer.result).get("configOptions"))
            if not answer.ok:
                self.fail("set-config-option", f"set {cid}={new_value}: {answer.describe()}")
            elif returned is None:
                self.fail("set-config-option", "the result has no configOptions list")
            else:
                before = {dict_of(o).get("id") for o in option_list}
                after = {dict_of(o).get("id"): dict_of(o) for o in returned}
                missing = [
                    f"option {i!r} missing from the result" for i in before if i not in after
                ]
                changed = after.get(cid)
                if changed is not None and changed.get("currentValue") != new_value:
                    missing.append(
                        f"{cid!r} currentValue is {changed.get('currentValue')!r}, "
                        f"expected {new_value!r}"
                    )
                self.verdicts.verdict(
                    "set-config-option", missing, f"set {cid}={new_value}, {len(returned)} back"
                )
        answer = await run.call(
            "session/set_config_option",
            {"sessionId": session_id, "configId": UNKNOWN_ID, "value": UNKNOWN_ID},
            self.timeout,
            owner="unknown-config",
        )
        if answer.error is not None:
            self.record("unknown-config", "pass", answer.describe())
        else:
            self.fail("unknown-config", f"set {UNKNOWN_ID}: {answer.describe()}")

    async def _prompt(self, run: Run, session_id: str) -> str | None:
        """The first turn: its result and its updates; the session it ran in when it
        ended normally, else None.

        A refused prompt is tried once more in a fresh session: a prompt the agent does
        not take is no failure (the checker just has no turn to judge), but one it
        refuses once and completes the next time is refused for no reason of its own.
        """
        mark = run.mark()
        answer = await self.prompt(run, session_id)
        refused: Answer | None = None
        if answer.error is not None and not answer.needs_auth:
            retry = await self.fresh_session(run)
            if retry is not None:
                refused, session_id = answer, retry
                mark = run.mark()
                answer = await self.prompt(run, session_id)
        if answer.needs_auth:
            why = self.blocked("session/prompt")
            self.record("prompt", "skip", why)
            self.skip(TURN_CHECKS, why)
            return None
        if answer.error is not None:
            # Refusing a request is always allowed: the checker just has no turn to judge.
            why = f"the prompt was refused ({answer.describe()}); give one it completes: --prompt"
            self.record("prompt", "skip", why)
            self.skip(TURN_CHECKS, why)
            self.prompt_refused = True
            return None
        if refused is not None:
            self.working_session[run.label] = session_id
            self.fail(
                "prompt",
                f"the prompt was refused ({refused.describe()}), then completed when sent "
                "again: a turn the agent can take ends with a stopReason",
                "PROMPT-003",
            )
        if not answer.ok:
            self.fail("prompt", f"session/prompt: {answer.describe()}", "PROMPT-003")
            self.skip(TURN_CHECKS, "the first prompt failed")
            return None
        reason = dict_of(answer.result).get("stopReason")
        if reason in STOP_REASONS:
            self.record("prompt", "pass", f"stopReason {reason}, {answer.seconds:.1f} s")
        elif reason is None:
            self.fail("prompt", "the result has no stopReason", "PROMPT-003")
        else:
            self.fail("prompt", f"stopReason {reason!r}", "PROMPT-005")
        response = run.response_to(answer.request_id, mark)
        if response is None:
            self.record("turn-order", "skip", "response not found on the wire")
        else:
            index = self.wire.entries.index(response)
            late = await self.late_updates(run, session_id, index)
            if late:
                self.fail(
                    "turn-order", f"{len(late)} update(s) after the response: {', '.join(late[:3])}"
                )
            else:
                before = run.updates(session_id, mark, index)
                self.record("turn-order", "pass", f"{len(before)} update(s) before the response")
        return session_id

    async def _turn_followups(self, run: Run, caps: dict[str, Any]) -> None:
        """More turns: a second one in the first session, then each content check in its own."""
        sid = await self.ready(run)
        if sid is None:
            return self.skip(TURN_CHECKS, "no session")
        self._judge_turn("second-prompt", await self.prompt(run, sid))
        link = {
            "type": "resource_link",
            "uri": Path(self.cwd, "README.md").as_uri(),
            "name": "README.md",
        }
        sid = await self.fresh_session(run)
        if sid is None:
            return self.skip(TURN_CHECKS, "no session")
        self._judge_turn("resource-link", await self.prompt(run, sid, link))
        sid = await self.fresh_session(run)
        if sid is not None:
            params = self.text_prompt(sid, self.options.prompt)
            params["_meta"] = META
            params["prompt"][0]["_meta"] = META
            self._judge_turn(
                "meta-accepted", await run.call("session/prompt", params, self.timeout)
            )
        await self._prompt_content(run, caps)

    def _judge_turn(self, key: str, answer: Answer) -> None:
        """A turn was taken: a result (its stopReason is the ``prompt`` check's business)."""
        if answer.ok:
            self.record(key, "pass", f"stopReason {dict_of(answer.result).get('stopReason')}")
        else:
            self.fail(key, answer.describe())

    async def _prompt_content(self, run: Run, caps: dict[str, Any]) -> None:
        prompt_caps = dict_of(caps.get("promptCapabilities"))
        blocks = _content_blocks(self.options.prompt, self.cwd)
        refused: list[str] = []
        accepted_wrongly: list[str] = []
        broken: list[str] = []
        advertised = [name for name in blocks if prompt_caps.get(name) is True]
        for name, block in blocks.items():
            sid = await self.fresh_session(run)
            if sid is None:
                break
            answer = await self.prompt(run, sid, block)
            if name in advertised:
                if not answer.ok:
                    broken.append(f"{block['type']} block ({name} advertised): {answer.describe()}")
            elif answer.ok:
                accepted_wrongly.append(f"{block['type']} block accepted without {name}")
            else:
                refused.append(block["type"])
        if len(advertised) == len(blocks):
            self.record("prompt-capabilities", "n/a", "every prompt capability is advertised")
        else:
            self.verdicts.verdict(
                "prompt-capabilities", accepted_wrongly, f"refused: {', '.join(refused)}"
            )
        if not advertised:
            self.record("prompt-content", "n/a", "no prompt capability advertised")
        else:
            self.verdicts.verdict("prompt-content", broken, f"accepted: {', '.join(advertised)}")

    def _crossed(self, run: Run, response: WireEntry, behind: Answer, took: float) -> bool:
        """Whether the turn's answer may have been written before the agent read the cancel.

        Judged by wire order: the answer to the request sent right behind the cancel
        proves the cancel was read; a turn answered before that proof may have crossed
        it. Only when that request got no answer at all does time decide (:data:`CROSSING`).
        """
        proof = run.response_to(behind.request_id) if behind.answered else None
        if proof is None:
            return took < CROSSING
        entries = self.wire.entries
        return entries.index(response) < entries.index(proof)

    async def _slow_turn(
        self, run: Run
    ) -> tuple[str, int, asyncio.Future[Answer], WireEntry | None, float] | str:
        """A ``--slow-prompt`` turn running in a fresh session: (session, wire mark, the
        prompt's answer to come, its first update if any, when it was sent); or why there
        is none. A prompt refused outright is sent once more, in another fresh session: an
        agent that refuses now and then does not skip the checks that need a turn."""
        slow = self.options.slow_prompt
        if not slow:
            return "needs --slow-prompt TEXT (a prompt that takes a while)"
        retried = False
        while True:
            session_id = await self.fresh_session(run)
            if session_id is None:
                return "no session"
            mark = run.mark()
            turn = asyncio.ensure_future(
                run.call("session/prompt", self.text_prompt(session_id, slow), self.timeout)
            )
            sent_at = time.monotonic()
            shown = await run.wait_update(
                session_id, mark, self.turn_start_wait, TURN_CONTENT_UPDATES
            )
            if self._prompt_response(run, mark) is None and not turn.done():
                return session_id, mark, turn, shown, sent_at
            answer = await turn
            if answer.error is None or answer.needs_auth or retried:
                return f"the slow prompt was over before the checker could act: {answer.describe()}"
            retried = True

    async def _cancel(self, run: Run) -> None:
        keys = ("cancel", "cancel-prompt", "after-cancel")
        if not self.verdicts.wants(*keys):
            return
        slow = await self._slow_turn(run)
        if isinstance(slow, str):
            return self.skip(keys, slow)
        session_id, mark, turn, shown, sent_at = slow
        cancelled_at = time.monotonic()
        when = f"sent {cancelled_at - sent_at:.2f} s into the turn, " + (
            "at its first update" if shown is not None else "with no update seen yet"
        )
        await run.notify("session/cancel", {"sessionId": session_id})
        # A request right behind the cancel: once the agent answers it, it has read the
        # cancel too (lines are read in order), so a turn answered after that answer had
        # the cancel in hand. A turn answered before it may have crossed the cancel.
        behind = asyncio.ensure_future(run.ping(self.cwd))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(turn), self.grace)
        answer = await turn
        pinged = await behind
        response = self._prompt_response(run, mark)
        took = (response.time if response is not None else time.monotonic()) - cancelled_at
        reason = dict_of(answer.result).get("stopReason") if answer.ok else None
        if response is not None and self._crossed(run, response, pinged, took):
            # Unless it says it is about the cancel (stopReason cancelled, or -32800).
            if reason != "cancelled" and answer.code != ErrorCode.REQUEST_CANCELLED:
                return self.skip(
                    keys,
                    f"the turn was already over: {answer.describe() if not answer.ok else reason} "
                    f"was answered before the agent read session/cancel "
                    f"({took * 1000:.0f} ms after it was sent)",
                )
        if answer.problem is not None:
            self.fail("cancel", f"after session/cancel ({when}): {answer.problem}", "CANCEL-004")
        elif answer.error is not None:
            self.fail(
                "cancel",
                f"the turn ended with {answer.describe()} (must be a result)",
                "CANCEL-005",
            )
        elif reason != "cancelled":
            self.fail("cancel", f"stopReason {reason!r} after session/cancel", "CANCEL-004")
        elif response is not None:
            late = await self.late_updates(run, session_id, self.wire.entries.index(response))
            if late:
                self.fail(
                    "cancel",
                    f"{len(late)} update(s) after the cancelled response: {', '.join(late[:3])}",
                    "CANCEL-006",
                )
            else:
                self.record("cancel", "pass", f"cancelled, {took:.2f} s after session/cancel")
        if answer.answered and took <= self.grace:
            self.record("cancel-prompt", "pass", f"answered {took:.2f} s after session/cancel")
        else:
            self.fail("cancel-prompt", f"not answered within {self.grace:g} s of session/cancel")
        if not answer.answered:
            return self.skip(("after-cancel",), "the cancelled turn never ended")
        if self.prompt_refused or not run.alive:
            return self.skip(
                ("after-cancel",), "--prompt is refused" if run.alive else "the agent died"
            )
        self._judge_turn("after-cancel", await self.prompt(run, session_id))

    async def _request_during_turn(self, run: Run) -> None:
        """``session/new`` while a slow turn runs: answered before the turn ends (RPC-013).

        The turn is cancelled afterwards; an agent that takes requests one at a time
        answers only once the turn is over, which is what this check is about.
        """
        key = "request-during-turn"
        if not self.verdicts.wants(key):
            return
        slow = await self._slow_turn(run)
        if isinstance(slow, str):
            return self.skip((key,), slow)
        session_id, mark, turn, _, _ = slow
        params = {"cwd": self.cwd, "mcpServers": []}
        during = await run.call("session/new", params, self.quick)
        ended = self._prompt_response(run, mark)
        await run.notify("session/cancel", {"sessionId": session_id})
        await turn
        response = run.response_to(during.request_id, mark)
        sid = dict_of((response.message or {}).get("result")).get("sessionId") if response else None
        if isinstance(sid, str):
            run.sessions.add(sid)  # it may have come late, after the turn
        entries = self.wire.entries
        if (
            during.answered
            and response is not None
            and (ended is None or entries.index(response) < entries.index(ended))
        ):
            self.record(key, "pass", f"session/new answered in {during.seconds:.2f} s")
        elif ended is not None:
            self.record(key, "skip", "the slow prompt ended before session/new was answered")
        else:
            self.fail(
                key,
                f"session/new sent while a turn ran: {during.describe()} (the agent answers "
                "other requests only once the turn is over?)",
            )

    def _prompt_response(self, run: Run, since: int) -> Any:
        """The response to the first session/prompt sent from ``since`` on, if it came."""
        for entry in self.wire.of(run.label, since):
            if (
                entry.direction == "to_agent"
                and entry.method == "session/prompt"
                and entry.is_request
            ):
                return run.response_to((entry.message or {}).get("id"), since)
        return None

    async def _cancel_request_turn(self, run: Run) -> None:
        """``$/cancel_request`` for a running slow turn: still exactly one answer.

        Judged with the quick probe's result (a request cancelled at once); the slow turn
        is tried only when that went well and a ``--slow-prompt`` is given.
        """
        problems = self.cancel_request_problems
        if problems is None:
            return  # the quick probe never ran: its skip stands
        slow = self.options.slow_prompt
        session_id = await self.fresh_session(run) if slow and not problems else None
        if slow and session_id is not None:
            request_id, mark = await run.raw_request(
                "session/prompt", self.text_prompt(session_id, slow), "cancel-request"
            )
            await run.wait_update(session_id, mark, self.turn_start_wait, TURN_CONTENT_UPDATES)
            if not run.raw_answers(request_id, mark):  # still running: cancel it
                await run.notify("$/cancel_request", {"requestId": request_id})
                if await run.wait_answer(request_id, mark, self.grace) is None:
                    # Support for $/cancel_request is optional: end the turn the usual way.
                    await run.notify("session/cancel", {"sessionId": session_id})
                    await run.wait_answer(request_id, mark, self.timeout)
                answers = run.raw_answers(request_id, mark)
                error = as_dict((answers[0].message or {}).get("error")) if answers else None
                if error is not None and error.get("code") != ErrorCode.REQUEST_CANCELLED:
                    problems = [
                        f"a prompt cancelled with $/cancel_request ended with error "
                        f"{error.get('code')}, not a result or -32800"
                    ]
            problems = problems or await self._one_answer(run, request_id, mark)
        self.verdicts.verdict("cancel-request", problems, "one answer each time")

    async def _load(self, run: Run, caps: dict[str, Any], prompted: str | None) -> None:
        if caps.get("loadSession") is not True:
            self.record("session-load", "n/a", "loadSession not advertised")
            return
        if prompted is None or not run.alive or prompted not in run.sessions:
            self.record("session-load", "skip", "no session with a finished turn")
            return
        mark = run.mark()
        answer = await run.call(
            "session/load", {"sessionId": prompted, "cwd": self.cwd, "mcpServers": []}, self.timeout
        )
        if not answer.ok:
            self.fail("session-load", f"session/load: {answer.describe()}", "SESS-006")
            return
        response = run.response_to(answer.request_id, mark)
        if response is None:
            self.record("session-load", "skip", "response not found on the wire")
            return
        index = self.wire.entries.index(response)
        replayed = run.updates(prompted, mark, index)
        await asyncio.sleep(LATE_WATCH)
        late = run.updates(prompted, index + 1, kinds=REPLAY_UPDATES)
        problems: list[tuple[str, str]] = []
        if late:
            problems.append(
                (
                    "SESS-007",
                    f"{len(late)} replayed update(s) after the response: {', '.join(late[:3])}",
                )
            )
        if not replayed and not late:
            problems.append(("SESS-006", "nothing replayed for a session with a finished turn"))
        self.verdicts.verdict(
            "session-load", problems, f"{len(replayed)} update(s) replayed before the response"
        )

    async def _list(self, run: Run, caps: dict[str, Any], prompted: str | None) -> None:
        if not isinstance(dict_of(caps.get("sessionCapabilities")).get("list"), dict):
            self.verdicts_na(
                ("session-list", "list-cursor"), "sessionCapabilities.list not advertised"
            )
            return
        if not run.alive and not await self.ready(run):
            return
        problems: list[tuple[str, str]] = []
        answer = await run.call("session/list", {}, self.timeout)
        if not answer.ok:
            problems.append(("LIST-004", f"session/list {{}}: {answer.describe()}"))
        elif as_list(dict_of(answer.result).get("sessions")) is None:
            problems.append(("LIST-004", "session/list {} has no sessions array"))
        found: dict[str, Any] = {}
        cursor: Any = None
        for _page in range(20):
            params: dict[str, Any] = {"cwd": self.cwd}
            if cursor is not None:
                params["cursor"] = cursor
            page = await run.call("session/list", params, self.timeout)
            sessions = as_list(dict_of(page.result).get("sessions"))
            if not page.ok or sessions is None:
                problems.append(
                    (
                        "LIST-004",
                        f"session/list with cwd: {page.describe() if not page.ok else 'no sessions array'}",
                    )
                )
                break
            for info in dicts(sessions):
                found[str(info.get("sessionId"))] = info.get("cwd")
            cursor = dict_of(page.result).get("nextCursor")
            if not cursor:
                break
        wrong = {sid: c for sid, c in found.items() if c != self.cwd}
        if wrong:
            problems.append(("LIST-011", f"cwd filter returned other folders: {short(wrong)}"))
        if prompted is not None and prompted not in found:
            problems.append(
                ("LIST-011", f"the prompted session {prompted} is not listed for its cwd")
            )
        nowhere = f"/nonexistent/acp-check-{uuid.uuid4().hex}"
        empty = await run.call("session/list", {"cwd": nowhere}, self.timeout)
        if not empty.ok:
            problems.append(("LIST-005", f"session/list for an unused cwd: {empty.describe()}"))
        elif dict_of(empty.result).get("sessions") != []:
            problems.append(
                (
                    "LIST-005",
                    f"an unused cwd gave sessions={short(dict_of(empty.result).get('sessions'))}",
                )
            )
        self.verdicts.verdict(
            "session-list", problems, f"{len(found)} session(s) listed for the cwd"
        )
        answer = await run.call(
            "session/list", {"cursor": INVALID_CURSOR}, self.timeout, owner="list-cursor"
        )
        if answer.error is not None:
            self.record("list-cursor", "pass", answer.describe())
        else:
            self.fail("list-cursor", f"cursor {INVALID_CURSOR!r}: {answer.describe()}")

    async def _unadvertised(self, run: Run, caps: dict[str, Any]) -> None:
        session_caps = dict_of(caps.get("sessionCapabilities"))
        base: dict[str, Any] = {"sessionId": NO_SESSION, "cwd": self.cwd, "mcpServers": []}
        probes: list[tuple[str, dict[str, Any]]] = []
        if caps.get("loadSession") is not True:
            probes.append(("session/load", base))
        for name in ("list", "resume", "close", "delete"):
            if not isinstance(session_caps.get(name), dict):
                params = {} if name == "list" else {"sessionId": NO_SESSION}
                if name == "resume":
                    params = base
                probes.append((f"session/{name}", params))
        if not isinstance(dict_of(caps.get("auth")).get("logout"), dict):
            probes.append(("logout", {}))
        if not probes:
            self.record("unadvertised-methods", "n/a", "every optional method is advertised")
            return
        problems: list[str] = []
        for method, params in probes:
            if not run.alive and not await self.ready(run):
                break
            run.process.provoked.add(NO_SESSION)
            answer = await run.call(method, params, self.quick, owner="unadvertised-methods")
            if answer.ok:
                problems.append(f"{method} succeeded without being advertised")
            elif not answer.answered:
                problems.append(f"{method}: {answer.describe()}")
        self.verdicts.verdict(
            "unadvertised-methods", problems, f"errors for {', '.join(m for m, _ in probes)}"
        )

    # -- the full run

    async def full(self) -> None:
        run = self.new_run("full", full=True)
        listener = _McpListener()
        try:
            await listener.start()
            await self._full(run, listener)
        finally:
            self.report.notes.extend(run.notes)
            await run.close()
            await listener.close()

    async def _full(self, run: Run, listener: _McpListener) -> None:
        if not await run.start():
            return self.verdicts.skip_stage("full", "the agent did not start")
        init = await run.initialize(timeout=self.timeout)
        if not init.ok:
            return self.verdicts.skip_stage(
                "full", f"initialize with every client capability: {init.describe()}"
            )
        self.note_auth_methods(init.result)
        run.process.roots.append(self.full_cwd)
        server = listener.server_entry()
        params: dict[str, Any] = {"cwd": self.full_cwd, "mcpServers": [server]}
        answer = await self.call_authenticated(run, "session/new", params)
        if answer.needs_auth:
            return self.verdicts.skip_stage("full", self.blocked("session/new (full run)"))
        session_id = dict_of(answer.result).get("sessionId") if answer.ok else None
        if not isinstance(session_id, str):
            if not run.alive and not await run.revive("it had died", self.timeout):
                return self.verdicts.skip_stage("full", "the agent could not be started again")
            plain = await run.call(
                "session/new", {"cwd": self.full_cwd, "mcpServers": []}, self.timeout
            )
            session_id = dict_of(plain.result).get("sessionId") if plain.ok else None
            if not isinstance(session_id, str):
                return self.verdicts.skip_stage("full", f"session/new: {plain.describe()}")
            self.fail("mcp-servers", f"session/new with a stdio MCP server: {answer.describe()}")
            self.record("mcp-connect", "skip", "the MCP server was refused")
        else:
            self.record("mcp-servers", "pass", "session/new with one stdio MCP server")
        run.sessions.add(session_id)
        prompts = list(self.options.tool_prompts) or [self.options.prompt]
        turns, locked_out = 0, ""  # turns run; why the first refused one was refused
        for text in prompts:
            if not run.alive:
                break
            mark = run.mark()
            answer = await run.call(
                "session/prompt", self.text_prompt(session_id, text), self.timeout
            )
            if answer.needs_auth:
                locked_out = self.blocked("session/prompt (full run)")
                break
            turns += 1
            response = run.response_to(answer.request_id, mark)
            if response is not None:
                await asyncio.sleep(LATE_WATCH)
        if self.verdicts.wants("mcp-connect") and not self.verdicts.done("mcp-connect"):
            if await listener.wait(self.timeout):
                self.record("mcp-connect", "pass", "the agent connected to the MCP server")
            elif locked_out and not turns:
                # An agent may connect its servers on the first turn; there was none.
                self.record("mcp-connect", "skip", f"no turn ran: {locked_out}")
            else:
                self.fail(
                    "mcp-connect",
                    f"no MCP initialize from the agent within {self.timeout:g} s of its turns",
                )
        if not self.options.tool_prompts:
            self.skip(("tool-progress",), "needs --tool-prompt TEXT (a prompt that uses tools)")
        await self._exit_during_turn(run, session_id)

    async def _exit_during_turn(self, run: Run, session_id: str) -> None:
        slow = self.options.slow_prompt
        if run.remote:
            return  # no stdin to close (the runner says so in the report)
        if not run.alive:
            return self.skip(("shutdown-turn",), "the agent process had ended")
        if not slow:
            self.skip(("shutdown-turn",), "needs --slow-prompt TEXT (a prompt that takes a while)")
            code = await run.close_stdin_and_wait(self.grace)
            self.exits.append(("with sessions open (full)", code))
            return
        mark = run.mark()
        request_id, _ = await run.raw_request(
            "session/prompt", self.text_prompt(session_id, slow), "shutdown-turn"
        )
        await run.wait_update(session_id, mark, self.turn_start_wait, TURN_CONTENT_UPDATES)
        if run.raw_answers(request_id, mark):
            return self.skip(("shutdown-turn",), "the slow prompt ended before stdin was closed")
        code = await run.close_stdin_and_wait(self.grace)
        if code is None:
            self.fail(
                "shutdown-turn", f"still running {self.grace:g} s after stdin closed during a turn"
            )
        else:
            self.record("shutdown-turn", "pass", f"exit status {code}")


class _McpListener:
    """Where the stand-in MCP server reports that an agent connected to it."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(8)
        self.connected = asyncio.Event()
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            line = await asyncio.wait_for(reader.readline(), 5.0)
            if line.strip() == self.token.encode():
                self.connected.set()
        writer.close()

    def server_entry(self) -> dict[str, Any]:
        script = str(Path(__file__).with_name("mcp_probe.py"))
        return {
            "name": "acp-check",
            "command": sys.executable,
            "args": [script, str(self.port), self.token],
            "env": [],
        }

    async def wait(self, timeout: float) -> bool:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.connected.wait(), timeout)
        return self.connected.is_set()

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()
