"""Checks over the recording of a whole run (every process, every line), or over a capture.

They need no agent: :func:`judge_wire` reads a :class:`~.wire.Wire`, so the same judgement
applies to a live run and to a capture of a real agent (:func:`~.wire.load_capture`).
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
from typing import Any, TypeVar

import msgspec

from .. import schema as s
from ..engine.roles import gate_allows
from ..protocol.errors import ErrorCode
from ..protocol.version import V2_DRAFT, answered_version, v1_shaped
from ..schema.methods import BY_NAME
from ..testing.strict import Problem, StrictValidator
from .report import Verdicts
from .wire import (
    UNDECODABLE,
    Process,
    Wire,
    WireEntry,
    as_list,
    dict_of,
    dicts,
    id_key,
    short,
    walk_config_options,
)

__all__ = ["judge_wire"]

JUDGED_ELSEWHERE: tuple[tuple[str, str, bool], ...] = (
    ("initialize", "$.result.protocolVersion", False),
    ("session/new", "$.result.sessionId", False),
    ("session/prompt", "$.result.stopReason", False),
    ("session/prompt", "$.result", True),
    ("session/list", "$.result.sessions", False),
    ("session/set_config_option", "$.result.configOptions", False),
)
"""(method, path, exact): payload problems a live check reports under its own rule."""

SELF_JUDGED = frozenset({"malformed-line-error", "string-ids", "cancel-request", "shutdown-turn"})
"""Owners that judge the ids and the number of the answers they provoke (the rest get
their answers' shape judged by ``responses`` too)."""

BAD_INPUT_CODES = frozenset({ErrorCode.PARSE_ERROR, ErrorCode.INVALID_REQUEST})
"""Errors JSON-RPC answers with id null: input whose id could not be read."""

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
    checks.terminals()
    checks.tool_progress()


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
                    problems.append(
                        (
                            "TRANS-003",
                            f"[{proc.label}] a message spread over lines: {short(e.raw.decode())!r}",
                        )
                    )
                    continue
                m = e.message
                if e.value is UNDECODABLE or m is None or not (_ENVELOPE_KEYS & m.keys()):
                    text = e.raw.decode("utf-8", "replace")
                    problems.append(
                        ("TRANS-004", f"[{proc.label}] not a JSON-RPC message: {short(text, 60)!r}")
                    )
        self.v.verdict("stdout-clean", _dedupe(problems), f"{count} line(s), all JSON-RPC")

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
                m = e.message or {}
                what = m.get("method") or f"response {m.get('id')!r}"
                if m.get("jsonrpc") != "2.0":
                    problems.append(f"[{proc.label}] {what}: jsonrpc is {m.get('jsonrpc')!r}")
                elif "method" in m and not isinstance(m["method"], str):
                    problems.append(f"[{proc.label}] method is {m['method']!r}")
                elif "method" in m and ("result" in m or "error" in m):
                    problems.append(f"[{proc.label}] {what} is both a request and a response")
                elif "params" in m and not isinstance(m["params"], (dict, list)):
                    problems.append(f"[{proc.label}] {what}: params is {short(m['params'])}")
        self.v.verdict("envelope", _dedupe(problems))

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
        self.v.verdict("schema", _dedupe(schema), f"{checked} message(s) valid")
        self.v.verdict("capabilities", _dedupe(caps))
        self.v.verdict("custom-fields", _dedupe(custom))

    # -- JSON-RPC bookkeeping

    def responses(self) -> None:
        problems: list[tuple[str, str]] = []
        for proc in self.processes():
            requests: dict[Any, str] = {}
            by_value: dict[str, Any] = {}
            answers: dict[Any, int] = {}
            for e in self.wire.of(proc.label):
                m = e.message
                if m is None:
                    continue
                if e.direction == "to_agent" and e.is_request:
                    requests[id_key(m["id"])] = str(m["method"])
                    by_value[str(m["id"])] = m["id"]
                    continue
                if e.direction != "from_agent" or "method" in m:
                    continue
                if self.wire.owner(e) in SELF_JUDGED:
                    continue
                if "result" not in m and "error" not in m:
                    if "id" in m:
                        problems.append(
                            (
                                "RPC-001",
                                f"[{proc.label}] response {m['id']!r} has neither result nor error",
                            )
                        )
                    continue
                rid = m.get("id")
                if rid is None:
                    continue  # see notification-unanswered
                key = id_key(rid)
                if key not in requests:
                    if str(rid) in by_value:
                        problems.append(
                            (
                                "RPC-003",
                                f"[{proc.label}] request id {by_value[str(rid)]!r} answered with id {rid!r}",
                            )
                        )
                    else:
                        problems.append(
                            ("RPC-003", f"[{proc.label}] response to unknown id {rid!r}")
                        )
                    continue
                answers[key] = answers.get(key, 0) + 1
                if answers[key] == 2:
                    problems.append(
                        ("RPC-005", f"[{proc.label}] {requests[key]} (id {rid!r}) answered twice")
                    )
                if "result" in m and "error" in m:
                    problems.append(
                        ("RPC-001", f"[{proc.label}] response {rid!r} has both result and error")
                    )
                elif "error" in m:
                    err = dict_of(m["error"])
                    code = err.get("code")
                    if (
                        not isinstance(code, int)
                        or isinstance(code, bool)
                        or not isinstance(err.get("message"), str)
                    ):
                        problems.append(
                            (
                                "RPC-001",
                                f"[{proc.label}] malformed error in response {rid!r}: {short(m['error'])}",
                            )
                        )
        self.v.verdict("responses", _dedupe(problems))

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
                    problems.append(
                        f"[{proc.label}] a response with id {'null' if 'id' in m else 'missing'}: {short(e.raw.decode('utf-8', 'replace'), 100)}"
                    )
        self.v.verdict("notification-unanswered", _dedupe(problems))

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
                        problems.append(
                            (
                                "RPC-012",
                                f"[{proc.label}] {m['method']} reuses id {rid!r} of a request still open",
                            )
                        )
                    pending.add(key)
                elif e.direction == "to_agent" and e.is_response:
                    pending.discard(id_key(m.get("id")))
        if not seen and not problems:
            self.v.record("agent-request-ids", "n/a", "the agent sent no requests")
        else:
            self.v.verdict("agent-request-ids", _dedupe(problems))

    def update_sessions(self) -> None:
        problems: list[str] = []
        for proc in self.processes():
            for e in self.from_agent(proc.label):
                su = e.session_update()
                if su is not None and su[0] not in proc.sessions | proc.provoked:
                    problems.append(f"[{proc.label}] session/update for unknown session {su[0]!r}")
        self.v.verdict("update-sessions", _dedupe(problems))

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
                            problems.append(
                                (
                                    "CFG-003",
                                    f"[{proc.label}] boolean config option {dict_of(option).get('id')!r} offered without session.configOptions.boolean",
                                )
                            )
                            break
                su = e.session_update()
                if su is not None and not compaction_ok and su[1].startswith("compaction"):
                    problems.append(
                        ("UNST-001", f"[{proc.label}] {su[1]} without session.compaction")
                    )
        self.v.verdict("capability-gates", _dedupe(problems))

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
            self.v.record("tool-call-ids", "n/a", "no tool calls seen")
            self.v.record("tool-call-updates", "n/a", "no tool calls seen")
            return
        self.v.verdict("tool-call-ids", _dedupe(duplicates))
        self.v.verdict("tool-call-updates", _dedupe(unannounced))

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
            self.v.record("permission-options", "n/a", "no permission requests seen")
        else:
            self.v.verdict("permission-options", _dedupe(problems))

    def tool_progress(self) -> None:
        if self.v.done("tool-progress"):
            return
        granted: list[tuple[str, str, str, int]] = []  # process, session, tool call, index
        problems: list[str] = []
        for proc in self.processes():
            asked: dict[Any, tuple[str, str, dict[str, str]]] = {}
            for n, e in enumerate(self.wire.entries):
                if e.process != proc.label or e.message is None:
                    continue
                if e.direction == "from_agent" and e.method == "session/request_permission":
                    kinds = {
                        str(o.get("optionId")): str(o.get("kind"))
                        for o in dicts(as_list(e.params.get("options")) or ())
                    }
                    tool = str(dict_of(e.params.get("toolCall")).get("toolCallId"))
                    asked[id_key(e.message["id"])] = (str(e.params.get("sessionId")), tool, kinds)
                elif e.direction == "to_agent" and e.is_response:
                    request = asked.get(id_key(e.message.get("id")))
                    outcome = dict_of(dict_of(e.message.get("result")).get("outcome"))
                    if request is not None and outcome.get("outcome") == "selected":
                        kind = request[2].get(str(outcome.get("optionId")), "")
                        if kind.startswith("allow"):
                            granted.append((proc.label, request[0], request[1], n))
        for process, session, tool, index in granted:
            statuses = [
                su[2].get("status")
                for e in self.wire.entries[index:]
                if e.process == process
                for su in [e.session_update()]
                if su is not None and su[0] == session and su[2].get("toolCallId") == tool
            ]
            if "in_progress" not in statuses:
                problems.append(
                    f"[{process}] tool call {tool!r} granted, then {statuses or 'nothing'}"
                )
        if not granted:
            self.v.record("tool-progress", "n/a", "no permission was granted")
        else:
            self.v.verdict(
                "tool-progress",
                _dedupe(problems),
                f"{len(granted)} granted call(s) reported in_progress",
            )

    # -- paths and terminals

    def paths(self) -> None:
        relative: list[str] = []
        outside: list[str] = []
        lines: list[str] = []
        seen_fs = seen_paths = seen_lines = False
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
                for what, line in _lines_in(e):
                    seen_lines = True
                    if not isinstance(line, int) or isinstance(line, bool) or line < 1:
                        lines.append(f"[{proc.label}] {what}: line {line!r}")
        if seen_paths:
            self.v.verdict("absolute-paths", _dedupe(relative))
        else:
            self.v.record("absolute-paths", "n/a", "no paths seen")
        if seen_fs:
            self.v.verdict("fs-roots", _dedupe(outside))
        else:
            self.v.record("fs-roots", "n/a", "no file-system calls seen")
        if seen_lines:
            self.v.verdict("line-numbers", _dedupe(lines))
        else:
            self.v.record("line-numbers", "n/a", "no line numbers seen")

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
                                f"[{proc.label}] tool call content names terminal {tid!r}, never created"
                            )
            for tid in sorted(live):
                rule = "TERM-005" if tid in killed else "TERM-004"
                unreleased.append(
                    (
                        rule,
                        f"[{proc.label}] terminal {tid} {'killed but ' if tid in killed else ''}never released",
                    )
                )
        if not created_any:
            self.v.record("terminals-released", "n/a", "no terminal was created")
            if not bad_ids:
                self.v.record("terminal-ids", "n/a", "no terminal was created")
        else:
            self.v.verdict("terminals-released", _dedupe(unreleased))
        self.v.verdict("terminal-ids", _dedupe(bad_ids))


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
    su = e.session_update()
    updates = [su[2]] if su is not None else []
    if method == "session/request_permission":
        updates.append(dict_of(params.get("toolCall")))
    for update in updates:
        for loc in dicts(as_list(update.get("locations")) or ()):
            if isinstance(loc.get("path"), str):
                yield "tool call location", loc["path"]
        for block in dicts(as_list(update.get("content")) or ()):
            if block.get("type") == "diff" and isinstance(block.get("path"), str):
                yield "diff", block["path"]


def _lines_in(e: WireEntry) -> Iterator[tuple[str, Any]]:
    if e.method == "fs/read_text_file" and "line" in e.params and e.params["line"] is not None:
        yield "fs/read_text_file", e.params["line"]
    su = e.session_update()
    updates = [su[2]] if su is not None else []
    if e.method == "session/request_permission":
        updates.append(dict_of(e.params.get("toolCall")))
    for update in updates:
        for loc in dicts(as_list(update.get("locations")) or ()):
            if "line" in loc and loc["line"] is not None:
                yield "tool call location", loc["line"]


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


Found = TypeVar("Found", str, tuple[str, str])


def _dedupe(problems: list[Found]) -> list[Found]:
    """Problems in order, each distinct one once (the same defect repeats across processes)."""
    seen: set[str] = set()
    out: list[Found] = []
    for p in problems:
        text: str = p[1] if isinstance(p, tuple) else p
        bare = re.sub(r"^\[[^\]]*\] ", "", text)
        if bare not in seen:
            seen.add(bare)
            out.append(p)
    return out
