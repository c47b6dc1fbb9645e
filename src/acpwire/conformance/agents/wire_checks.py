"""Checks over the recording of a whole run (every process, every line), or over a capture.

They need no agent: :func:`judge_wire` reads a :class:`~..wire.Wire`, so the same judgement
applies to a live run and to a capture of a real agent (:func:`~..wire.load_capture`).
Messages a live check provoked on purpose (``owner`` set) are left to that check, and a
payload field a live check judges (the stopReason of a prompt, the protocol version) is
not judged again here: one defect, one failure.

A check that finds nothing to look at (no terminal was ever created) is ``n/a``.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterator
from typing import Any

import msgspec

from ... import schema as s
from ...engine.roles import gate_allows
from ...protocol.version import V2_DRAFT, answered_version, v1_shaped
from ...schema.methods import BY_NAME
from ...testing.strict import Problem, StrictValidator
from ..envelope import BAD_INPUT_CODES, Answers, envelope_problem
from ..registry import Group
from ..report import Verdicts
from ..wire import (
    UNDECODABLE,
    Process,
    Wire,
    WireEntry,
    as_list,
    dict_of,
    dicts,
    distinct,
    id_key,
    short,
    walk_config_options,
)
from .handshake import SHUTDOWN_TURN
from .jsonrpc import CANCEL_REQUEST, MALFORMED_LINE_ERROR, STRING_IDS
from .tools import judge_tool_progress

__all__ = [
    "ABSOLUTE_PATHS",
    "AGENT_REQUEST_IDS",
    "CAPABILITIES",
    "CAPABILITY_GATES",
    "CUSTOM_FIELDS",
    "ENVELOPE",
    "FS_ROOTS",
    "GROUP",
    "LINE_NUMBERS",
    "NOTIFICATION_UNANSWERED",
    "PERMISSION_OPTIONS",
    "RESPONSES",
    "SCHEMA",
    "STDOUT_CLEAN",
    "TERMINALS_RELEASED",
    "TERMINAL_IDS",
    "TOOL_CALL_IDS",
    "TOOL_CALL_UPDATES",
    "UPDATE_SESSIONS",
    "is_absolute",
    "judge_wire",
]

GROUP = Group("agent", stage="wire")
ABSOLUTE_PATHS = GROUP.check(
    "absolute-paths",
    "paths in fs calls, terminals and tool-call locations are absolute",
    proves=("OVR-001",),
)
FS_ROOTS = GROUP.check(
    "fs-roots", "fs calls stay inside the session's folder", proves=("SESS-023",)
)
TERMINALS_RELEASED = GROUP.check(
    "terminals-released",
    "every terminal created is released, killed ones too",
    proves=("TERM-004", "TERM-005"),
)
TERMINAL_IDS = GROUP.check(
    "terminal-ids",
    "terminal calls use only ids the client issued and not yet released",
    proves=("TERM-007",),
)
STDOUT_CLEAN = GROUP.check(
    "stdout-clean",
    "stdout carries only UTF-8 JSON messages, one per line",
    proves=("TRANS-001", "TRANS-003", "TRANS-004"),
)
ENVELOPE = GROUP.check("envelope", "every message is a JSON-RPC 2.0 object", proves=("RPC-011",))
SCHEMA = GROUP.check("schema", "every payload matches the ACP v1 schema", proves=("SCHEMA-001",))
CAPABILITIES = GROUP.check(
    "capabilities", "agentCapabilities has the documented shape", proves=("INIT-017",)
)
CUSTOM_FIELDS = GROUP.check(
    "custom-fields", "no fields the schema does not define outside _meta", proves=("EXT-002",)
)
RESPONSES = GROUP.check(
    "responses",
    "every request gets exactly one well-formed response with its id",
    proves=("RPC-001", "RPC-003", "RPC-005"),
)
NOTIFICATION_UNANSWERED = GROUP.check(
    "notification-unanswered", "notifications get no response", proves=("RPC-002",)
)
AGENT_REQUEST_IDS = GROUP.check(
    "agent-request-ids",
    "the agent's own requests have unique, non-null integer or string ids",
    proves=("RPC-004", "RPC-012"),
)
UPDATE_SESSIONS = GROUP.check(
    "update-sessions", "session/update names only known sessions", proves=("PROMPT-006",)
)
CAPABILITY_GATES = GROUP.check(
    "capability-gates",
    "no fs/terminal/elicitation calls, boolean options or compaction updates not advertised",
    proves=("FS-002", "TERM-002", "ELIC-005", "CFG-003", "UNST-001"),
)
TOOL_CALL_IDS = GROUP.check(
    "tool-call-ids", "a toolCallId is used by one tool call per session", proves=("TOOL-004",)
)
TOOL_CALL_UPDATES = GROUP.check(
    "tool-call-updates", "tool_call_update names a tool call announced before", proves=("TOOL-002",)
)
PERMISSION_OPTIONS = GROUP.check(
    "permission-options",
    "the options of a permission request have distinct ids",
    proves=("TOOL-005",),
)
LINE_NUMBERS = GROUP.check("line-numbers", "line numbers are 1-based", proves=("OVR-002",))

JUDGED_ELSEWHERE: tuple[tuple[str, str, bool], ...] = (
    ("initialize", "$.result.protocolVersion", False),
    ("session/new", "$.result.sessionId", False),
    ("session/prompt", "$.result.stopReason", False),
    ("session/prompt", "$.result", True),
    ("session/list", "$.result.sessions", False),
    ("session/set_config_option", "$.result.configOptions", False),
)
"""(method, path, exact): payload problems a live check reports under its own rule."""

SELF_JUDGED = (MALFORMED_LINE_ERROR, STRING_IDS, CANCEL_REQUEST, SHUTDOWN_TURN)
"""Checks that judge the ids and the number of the answers they provoke (the answers to
what the other checks provoke get their shape judged by ``responses`` too)."""

_ENVELOPE_KEYS = frozenset({"id", "method", "result", "error"})
_WINDOWS_ABSOLUTE = re.compile(r"^[A-Za-z]:[\\/]|^\\\\")


def is_absolute(path: str) -> bool:
    """Absolute on the agent's machine: POSIX ``/...`` or a Windows drive or UNC path."""
    return path.startswith("/") or bool(_WINDOWS_ABSOLUTE.match(path))


def judge_wire(wire: Wire, verdicts: Verdicts) -> None:
    """Run every wire check over ``wire`` into ``verdicts``."""
    checks = _WireChecks(wire, verdicts)
    checks.stdout_clean()
    checks.envelope()
    checks.payloads()
    checks.responses()
    checks.notifications_unanswered()
    checks.agent_request_ids()
    checks.update_sessions()
    checks.gates()
    checks.tool_calls()
    checks.permission_options()
    checks.paths()
    checks.line_numbers()
    checks.terminals()
    judge_tool_progress(wire, verdicts)


def _broken_json_runs(lines: list[WireEntry]) -> set[int]:
    """Indexes (into ``lines``) of non-JSON lines that are pieces of one multi-line JSON text."""
    pieces: set[int] = set()
    i = 0
    while i < len(lines):
        if lines[i].value is not UNDECODABLE:
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j].value is UNDECODABLE:
            j += 1
        # Try every stretch i..k of this run of non-JSON lines.
        for k in range(j, i + 1, -1):
            text = b"\n".join(e.raw for e in lines[i:k])
            try:
                json.loads(text)
            except ValueError:
                continue
            pieces.update(range(i, k))
            break
        i = max(j, i + 1)
    return pieces


class _WireChecks:
    def __init__(self, wire: Wire, verdicts: Verdicts) -> None:
        self.wire = wire
        self.v = verdicts

    def processes(self) -> Iterator[Process]:
        return iter(self.wire.processes.values())

    def from_agent(self, process: str) -> list[WireEntry]:
        return [e for e in self.wire.of(process) if e.direction == "from_agent"]

    # -- transport and envelope

    def stdout_clean(self) -> None:
        problems: list[tuple[str, str]] = []
        count = 0
        for proc in self.processes():
            lines = self.from_agent(proc.label)
            count += len(lines)
            pieces = _broken_json_runs(lines)
            for n, e in enumerate(lines):
                try:
                    e.raw.decode("utf-8")
                except UnicodeDecodeError:
                    problems.append(("TRANS-001", f"[{proc.label}] not UTF-8: {short(e.raw)}"))
                    continue
                if n in pieces:
                    text = short(e.raw.decode())
                    problems.append(
                        ("TRANS-003", f"[{proc.label}] a message spread over lines: {text!r}")
                    )
                    continue
                m = e.message
                if e.value is UNDECODABLE or m is None or not (_ENVELOPE_KEYS & m.keys()):
                    text = short(e.raw.decode("utf-8", "replace"), 60)
                    problems.append(
                        ("TRANS-004", f"[{proc.label}] not a JSON-RPC message: {text!r}")
                    )
        self.v.verdict(STDOUT_CLEAN, distinct(problems), f"{count} line(s), all JSON-RPC")

    def messages(self, process: str) -> Iterator[WireEntry]:
        """The agent's lines that are JSON objects shaped like messages."""
        for e in self.from_agent(process):
            m = e.message
            if m is not None and _ENVELOPE_KEYS & m.keys():
                yield e

    def envelope(self) -> None:
        problems: list[str] = []
        for proc in self.processes():
            for e in self.messages(proc.label):
                problem = envelope_problem(e)
                if problem is not None:
                    problems.append(f"[{proc.label}] {problem}")
        self.v.verdict(ENVELOPE, distinct(problems))

    # -- payloads against the schema

    def payloads(self) -> None:
        schema: list[str] = []
        caps: list[str] = []
        custom: list[str] = []
        checked = 0
        for proc in self.processes():
            validator = StrictValidator()
            for e in self.wire.of(proc.label):
                m = e.message
                if m is None:
                    continue
                if e.direction == "to_agent":
                    if self.wire.owner(e) is None:
                        validator.note_request(m)
                    continue
                if self.wire.owner(e) is not None or not (_ENVELOPE_KEYS & m.keys()):
                    continue
                answered = validator.method_of(m) if "method" not in m else None
                if answered == "initialize" and _chose_v2(m):
                    # An agent that also serves the v2 draft answers a later version with
                    # 2 (a probe asks for 65535): from here on it speaks v2.
                    validator = StrictValidator.for_v2()
                    validator.note_request({"id": m.get("id"), "method": "initialize"})
                checked += 1
                for problem in validator.validate(m):
                    method = m.get("method") if "method" in m else answered
                    if _judged_elsewhere(method, problem):
                        continue
                    what = f"[{proc.label}] {method or 'response'} {problem}"
                    if problem.newer:
                        self.v.newer(f"{method or 'response'} {problem}")
                    elif method == "initialize" and problem.path.startswith(
                        "$.result.agentCapabilities"
                    ):
                        caps.append(what)
                    elif problem.kind == "unknown-field":
                        custom.append(what)
                    else:
                        schema.append(what)
        self.v.verdict(SCHEMA, distinct(schema), f"{checked} message(s) valid")
        self.v.verdict(CAPABILITIES, distinct(caps))
        self.v.verdict(CUSTOM_FIELDS, distinct(custom))

    # -- JSON-RPC bookkeeping

    def responses(self) -> None:
        self_judged = {c.key for c in SELF_JUDGED}
        problems: list[tuple[str, str]] = []
        for proc in self.processes():
            answers = Answers(proc.label)
            for e in self.wire.of(proc.label):
                m = e.message
                if m is None:
                    continue
                if e.direction == "to_agent" and e.is_request:
                    answers.ask(e)
                    continue
                if e.direction != "from_agent" or "method" in m:
                    continue
                if self.wire.owner(e) in self_judged:
                    continue
                if "result" not in m and "error" not in m:
                    if "id" in m:
                        problems += answers.answer(m)
                    continue
                if m.get("id") is not None:  # an id of null: see notification-unanswered
                    problems += answers.answer(m)
        self.v.verdict(RESPONSES, distinct(problems))

    def notifications_unanswered(self) -> None:
        problems: list[str] = []
        for proc in self.processes():
            for e in self.from_agent(proc.label):
                m = e.message
                if m is None or self.wire.owner(e) is not None or "method" in m:
                    continue
                if ("result" in m or "error" in m) and m.get("id") is None:
                    if dict_of(m.get("error")).get("code") in BAD_INPUT_CODES:
                        continue  # the answer to a line with no usable id (not a notification)
                    which = "null" if "id" in m else "missing"
                    text = short(e.raw.decode("utf-8", "replace"), 100)
                    problems.append(f"[{proc.label}] a response with id {which}: {text}")
        self.v.verdict(NOTIFICATION_UNANSWERED, distinct(problems))

    def agent_request_ids(self) -> None:
        problems: list[tuple[str, str]] = []
        seen = False
        for proc in self.processes():
            pending: set[Any] = set()
            for e in self.wire.of(proc.label):
                m = e.message
                if m is None:
                    continue
                if e.direction == "from_agent" and e.is_request:
                    seen = True
                    rid = m["id"]
                    if rid is None or isinstance(rid, (float, bool)):
                        problems.append(
                            ("RPC-004", f"[{proc.label}] {m['method']} with id {rid!r}")
                        )
                    key = id_key(rid)
                    if key in pending:
                        what = f"{m['method']} reuses id {rid!r} of a request still open"
                        problems.append(("RPC-012", f"[{proc.label}] {what}"))
                    pending.add(key)
                elif e.direction == "to_agent" and e.is_response:
                    pending.discard(id_key(m.get("id")))
        if not seen and not problems:
            self.v.record(AGENT_REQUEST_IDS, "n/a", "the agent sent no requests")
        else:
            self.v.verdict(AGENT_REQUEST_IDS, distinct(problems))

    def update_sessions(self) -> None:
        problems: list[str] = []
        for proc in self.processes():
            for e in self.from_agent(proc.label):
                su = e.session_update()
                if su is not None and su[0] not in proc.sessions | proc.provoked:
                    problems.append(f"[{proc.label}] session/update for unknown session {su[0]!r}")
        self.v.verdict(UPDATE_SESSIONS, distinct(problems))

    # -- capabilities

    def gates(self) -> None:
        problems: list[tuple[str, str]] = []
        for proc in self.processes():
            caps = proc.capabilities
            try:
                typed = s.convert(caps, s.ClientCapabilities)
            except (msgspec.ValidationError, ValueError):  # a capture's client may be odd
                typed = s.ClientCapabilities()
            boolean_ok = isinstance(
                dict_of(dict_of(caps.get("session")).get("configOptions")).get("boolean"), dict
            )
            compaction_ok = isinstance(dict_of(caps.get("session")).get("compaction"), dict)
            for e in self.from_agent(proc.label):
                method = e.method
                spec = BY_NAME.get(method) if method else None
                if (
                    spec is not None
                    and spec.gate is not None
                    and spec.gate.advertised_by == "client"
                ):
                    mode = e.params.get("mode") if isinstance(e.params.get("mode"), str) else None
                    if not gate_allows(spec.gate, typed, mode):
                        rule = {"fs": "FS-002", "terminal": "TERM-002"}.get(
                            spec.gate.path.split(".")[0], "ELIC-005"
                        )
                        problems.append(
                            (rule, f"[{proc.label}] called {method} (needs {spec.gate.path})")
                        )
                if not boolean_ok and e.message is not None:
                    for option in walk_config_options(e.message):
                        if dict_of(option).get("type") == "boolean":
                            what = f"boolean config option {dict_of(option).get('id')!r}"
                            problems.append(
                                (
                                    "CFG-003",
                                    f"[{proc.label}] {what} offered without "
                                    "session.configOptions.boolean",
                                )
                            )
                            break
                su = e.session_update()
                if su is not None and not compaction_ok and su[1].startswith("compaction"):
                    problems.append(
                        ("UNST-001", f"[{proc.label}] {su[1]} without session.compaction")
                    )
        self.v.verdict(CAPABILITY_GATES, distinct(problems))

    # -- tool calls

    def tool_calls(self) -> None:
        duplicates: list[str] = []
        unannounced: list[str] = []
        any_call = False
        for proc in self.processes():
            announced: dict[str, set[str]] = {}
            for e in self.wire.of(proc.label):
                if e.direction == "to_agent" and e.method == "session/load":
                    announced.pop(str(e.params.get("sessionId")), None)  # the replay repeats them
                    continue
                if e.direction == "from_agent" and e.method == "session/request_permission":
                    tool = dict_of(e.params.get("toolCall"))
                    ids = announced.setdefault(str(e.params.get("sessionId")), set())
                    if isinstance(tool.get("toolCallId"), str):
                        ids.add(tool["toolCallId"])
                    continue
                su = e.session_update()
                if su is None or su[1] not in ("tool_call", "tool_call_update"):
                    continue
                any_call = True
                ids = announced.setdefault(su[0], set())
                tool_id = su[2].get("toolCallId")
                if su[1] == "tool_call":
                    if tool_id in ids:
                        duplicates.append(
                            f"[{proc.label}] tool_call {tool_id!r} announced twice in {su[0]}"
                        )
                    ids.add(str(tool_id))
                elif tool_id not in ids:
                    unannounced.append(
                        f"[{proc.label}] tool_call_update for {tool_id!r} never announced"
                    )
        if not any_call:
            self.v.skip((TOOL_CALL_IDS, TOOL_CALL_UPDATES), "no tool calls seen", "n/a")
            return
        self.v.verdict(TOOL_CALL_IDS, distinct(duplicates))
        self.v.verdict(TOOL_CALL_UPDATES, distinct(unannounced))

    def permission_options(self) -> None:
        problems: list[str] = []
        seen = False
        for proc in self.processes():
            for e in self.from_agent(proc.label):
                if e.method != "session/request_permission":
                    continue
                seen = True
                ids = [o.get("optionId") for o in dicts(as_list(e.params.get("options")) or ())]
                repeated = sorted({str(i) for i in ids if ids.count(i) > 1})
                if repeated:
                    problems.append(f"[{proc.label}] option ids repeated: {', '.join(repeated)}")
        if not seen:
            self.v.record(PERMISSION_OPTIONS, "n/a", "no permission requests seen")
        else:
            self.v.verdict(PERMISSION_OPTIONS, distinct(problems))

    # -- paths, line numbers and terminals

    def paths(self) -> None:
        relative: list[str] = []
        outside: list[str] = []
        seen_fs = seen_paths = False
        for proc in self.processes():
            roots = [posixpath.normpath(r) for r in proc.roots]
            for e in self.from_agent(proc.label):
                for what, path in _paths_in(e):
                    seen_paths = True
                    if not is_absolute(path):
                        relative.append(f"[{proc.label}] {what}: {path!r}")
                    elif what.startswith("fs/") and roots and path.startswith("/"):
                        seen_fs = True
                        norm = posixpath.normpath(path)
                        if not any(
                            norm == r or norm.startswith(r.rstrip("/") + "/") for r in roots
                        ):
                            outside.append(f"[{proc.label}] {what}: {path!r}")
        if seen_paths:
            self.v.verdict(ABSOLUTE_PATHS, distinct(relative))
        else:
            self.v.record(ABSOLUTE_PATHS, "n/a", "no paths seen")
        if seen_fs:
            self.v.verdict(FS_ROOTS, distinct(outside))
        else:
            self.v.record(FS_ROOTS, "n/a", "no file-system calls seen")

    def line_numbers(self) -> None:
        lines: list[str] = []
        seen = False
        for proc in self.processes():
            for e in self.from_agent(proc.label):
                for what, line in _lines_in(e):
                    seen = True
                    if not isinstance(line, int) or isinstance(line, bool) or line < 1:
                        lines.append(f"[{proc.label}] {what}: line {line!r}")
        if seen:
            self.v.verdict(LINE_NUMBERS, distinct(lines))
        else:
            self.v.record(LINE_NUMBERS, "n/a", "no line numbers seen")

    def terminals(self) -> None:
        unreleased: list[tuple[str, str]] = []
        bad_ids: list[str] = []
        created_any = False
        for proc in self.processes():
            creates: dict[Any, int] = {}
            live: set[str] = set()
            killed: set[str] = set()
            released: set[str] = set()
            for e in self.wire.of(proc.label):
                m = e.message
                if m is None:
                    continue
                if e.direction == "from_agent" and e.method == "terminal/create" and "id" in m:
                    creates[id_key(m["id"])] = 1
                elif e.direction == "to_agent" and e.is_response and id_key(m.get("id")) in creates:
                    tid = dict_of(m.get("result")).get("terminalId")
                    if isinstance(tid, str):
                        live.add(tid)
                        created_any = True
                elif e.direction == "from_agent" and (e.method or "").startswith("terminal/"):
                    tid = e.params.get("terminalId")
                    if tid not in live:
                        state = "released" if tid in released else "never created"
                        bad_ids.append(f"[{proc.label}] {e.method} for {state} terminal {tid!r}")
                    elif e.method == "terminal/kill":
                        killed.add(str(tid))
                    elif e.method == "terminal/release":
                        live.discard(str(tid))
                        released.add(str(tid))
                su = e.session_update()
                if su is not None:
                    for block in dicts(as_list(su[2].get("content")) or ()):
                        tid = block.get("terminalId")
                        if (
                            block.get("type") == "terminal"
                            and tid not in live
                            and tid not in released
                        ):
                            bad_ids.append(
                                f"[{proc.label}] tool call content names terminal {tid!r}, "
                                "never created"
                            )
            for tid in sorted(live):
                rule = "TERM-005" if tid in killed else "TERM-004"
                how = "killed but never released" if tid in killed else "never released"
                unreleased.append((rule, f"[{proc.label}] terminal {tid} {how}"))
        if not created_any:
            self.v.record(TERMINALS_RELEASED, "n/a", "no terminal was created")
            if not bad_ids:
                self.v.record(TERMINAL_IDS, "n/a", "no terminal was created")
        else:
            self.v.verdict(TERMINALS_RELEASED, distinct(unreleased))
        self.v.verdict(TERMINAL_IDS, distinct(bad_ids))


def _paths_in(e: WireEntry) -> Iterator[tuple[str, str]]:
    """(where, path) for every path an agent message carries."""
    method = e.method
    params = e.params
    if method in ("fs/read_text_file", "fs/write_text_file") and isinstance(
        params.get("path"), str
    ):
        yield method, params["path"]
    if method == "terminal/create" and isinstance(params.get("cwd"), str):
        yield "terminal/create cwd", params["cwd"]
    for update in _updates_in(e):
        for loc in dicts(as_list(update.get("locations")) or ()):
            if isinstance(loc.get("path"), str):
                yield "tool call location", loc["path"]
        for block in dicts(as_list(update.get("content")) or ()):
            if block.get("type") == "diff" and isinstance(block.get("path"), str):
                yield "diff", block["path"]


def _lines_in(e: WireEntry) -> Iterator[tuple[str, Any]]:
    if e.method == "fs/read_text_file" and "line" in e.params and e.params["line"] is not None:
        yield "fs/read_text_file", e.params["line"]
    for update in _updates_in(e):
        for loc in dicts(as_list(update.get("locations")) or ()):
            if "line" in loc and loc["line"] is not None:
                yield "tool call location", loc["line"]


def _updates_in(e: WireEntry) -> list[dict[str, Any]]:
    """The tool-call-shaped objects of a message: a session update, a permission's call."""
    su = e.session_update()
    updates = [su[2]] if su is not None else []
    if e.method == "session/request_permission":
        updates.append(dict_of(e.params.get("toolCall")))
    return updates


def _chose_v2(answer: dict[str, Any]) -> bool:
    """Whether an ``initialize`` answer chose the v2 draft (in v2's shape)."""
    result = answer.get("result")
    return answered_version(result) == V2_DRAFT and not v1_shaped(result)


def _judged_elsewhere(method: str | None, problem: Problem) -> bool:
    for m, path, exact in JUDGED_ELSEWHERE:
        if method != m:
            continue
        if problem.path == path or (
            not exact and problem.path.startswith((path + ".", path + "["))
        ):
            return True
    return False
