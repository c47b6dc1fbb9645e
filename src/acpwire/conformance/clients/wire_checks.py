"""Checks over everything a client wrote in every scenario of ``acp check --client``.

Each scenario is a process label on the run's :class:`~..wire.Wire`: ``to_agent`` lines
are the client's, ``from_agent`` lines the scripted agent's. The scripted agent
advertises no optional capability, no prompt capability and no MCP transport, so any
call that needs one is a gate violation. Lines a scenario wrote on purpose as garbage,
requests a live check owns (:meth:`~..wire.Wire.claim`) and replies it judged itself are
left to that check.

A request of the agent that never got an answer counts (RPC-005) only when the client
kept the connection open for ``quick_timeout`` seconds after it: a client that ends
because the agent died, or at the end of its turn, leaves no debt.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ...testing.strict import StrictValidator
from ..agents.wire_checks import is_absolute
from ..envelope import BAD_INPUT_CODES, Answers, envelope_problem
from ..registry import Group
from ..report import Verdicts
from ..wire import UNDECODABLE, Wire, WireEntry, as_list, dict_of, dicts, distinct, id_key, short
from .driver import ScriptedAgent

__all__ = [
    "CLIENT_CUSTOM_FIELDS",
    "CLIENT_ENVELOPE",
    "CLIENT_GATES",
    "CLIENT_NOTIFICATIONS",
    "CLIENT_ORDER",
    "CLIENT_PATHS",
    "CLIENT_PROMPT_CONTENT",
    "CLIENT_REQUEST_IDS",
    "CLIENT_RESPONSES",
    "CLIENT_SCHEMA",
    "CLIENT_STDIN_CLEAN",
    "GROUP",
    "judge_client_wire",
]

GROUP = Group("client", stage="wire")
CLIENT_STDIN_CLEAN = GROUP.check(
    "client-stdin-clean",
    "the agent's stdin gets only UTF-8 JSON, one message per line",
    proves=("TRANS-001", "TRANS-003"),
)
CLIENT_ENVELOPE = GROUP.check(
    "client-envelope", "every message is a JSON-RPC 2.0 object", proves=("RPC-011",)
)
CLIENT_SCHEMA = GROUP.check(
    "client-schema", "every payload matches the ACP v1 schema", proves=("TRANS-005",)
)
CLIENT_CUSTOM_FIELDS = GROUP.check(
    "client-custom-fields",
    "no fields the schema does not define outside _meta",
    proves=("EXT-002",),
)
CLIENT_RESPONSES = GROUP.check(
    "client-responses",
    "every request of the agent gets exactly one well-formed response with its id",
    proves=("RPC-001", "RPC-003", "RPC-005"),
)
CLIENT_NOTIFICATIONS = GROUP.check(
    "client-notifications", "notifications get no response", proves=("RPC-002",)
)
CLIENT_REQUEST_IDS = GROUP.check(
    "client-request-ids",
    "the client's requests have non-null integer or string ids",
    proves=("RPC-004",),
)
CLIENT_ORDER = GROUP.check(
    "client-order",
    "initialize first, session/new after its answer, session/prompt after session/new's",
    proves=("INIT-001", "SESS-001", "PROMPT-001"),
)
CLIENT_GATES = GROUP.check(
    "client-gates",
    "no load, resume, close, list, delete, logout, extra roots or HTTP MCP not advertised",
    proves=(
        "SESS-004",
        "SESS-009",
        "SESS-013",
        "SESS-017",
        "SESS-026",
        "LIST-003",
        "DEL-003",
        "AUTH-001",
    ),
)
CLIENT_PROMPT_CONTENT = GROUP.check(
    "client-prompt-content",
    "prompts carry only text and resource links when no prompt capability is advertised",
    proves=("PROMPT-002",),
)
CLIENT_PATHS = GROUP.check(
    "client-paths", "session/new's cwd is an absolute path", proves=("SESS-019", "OVR-001")
)

_GATED: Mapping[str, str] = {
    "session/load": "SESS-004",
    "session/resume": "SESS-009",
    "session/close": "SESS-013",
    "session/list": "LIST-003",
    "session/delete": "DEL-003",
    "logout": "AUTH-001",
}
_SESSION_SETUP = ("session/new", "session/load", "session/resume")
_BASELINE_BLOCKS = {"text", "resource_link"}


def _judged_live(path: str) -> bool:
    """initialize fields the baseline judges (INIT-007, INIT-013, INIT-002), not the schema:
    the version, the capabilities object as a whole, and anything in clientInfo."""
    return path in ("$.params.protocolVersion", "$.params.clientCapabilities") or (
        path == "$.params.clientInfo" or path.startswith("$.params.clientInfo.")
    )


def judge_client_wire(
    wire: Wire, agents: Mapping[str, ScriptedAgent], verdicts: Verdicts, quick_timeout: float
) -> None:
    """Give the ``wire``-stage client checks their verdicts from the whole recording."""
    judge = _Judge(wire, agents, verdicts, quick_timeout)
    judge.lines()
    judge.payloads()
    judge.responses()
    judge.requests()


@dataclass
class _Judge:
    wire: Wire
    agents: Mapping[str, ScriptedAgent]
    v: Verdicts
    quick: float
    """A request unanswered this long while the client kept the connection open is a debt."""

    def scenarios(self) -> Iterator[str]:
        return iter(sorted({e.process for e in self.wire.entries}))

    def owner(self, e: WireEntry) -> str | None:
        """The live check that judges ``e`` alone: a line it marked, or a request it claimed
        (the agent's request, or the client's answer to it)."""
        return self.wire.owner(e, asker="from_agent")

    def from_client(self, scenario: str) -> Iterator[WireEntry]:
        return (e for e in self.wire.of(scenario) if e.direction == "to_agent")

    def lines(self) -> None:
        """client-stdin-clean and client-envelope."""
        clean: list[tuple[str, str]] = []
        envelope: list[str] = []
        count = 0
        for name in self.scenarios():
            agent = self.agents.get(name)
            for raw in agent.unterminated if agent is not None else []:
                clean.append(("TRANS-003", f"[{name}] a line without its newline: {_text(raw)}"))
            for e in self.from_client(name):
                count += 1
                try:
                    e.raw.decode("utf-8")
                except UnicodeDecodeError:
                    clean.append(
                        ("TRANS-001", f"[{name}] a line that is not UTF-8: {_text(e.raw)}")
                    )
                    continue
                if e.value is UNDECODABLE or e.message is None:
                    what = (
                        "an empty line"
                        if not e.raw.strip()
                        else f"not a JSON object: {_text(e.raw)}"
                    )
                    clean.append(("TRANS-003", f"[{name}] {what}"))
                    continue
                problem = envelope_problem(e)
                if problem is not None:
                    envelope.append(f"[{name}] {problem}")
        self.v.verdict(CLIENT_STDIN_CLEAN, distinct(clean), f"{count} line(s), all JSON")
        self.v.verdict(CLIENT_ENVELOPE, distinct(envelope))

    def payloads(self) -> None:
        """client-schema and client-custom-fields, with acpwire's strict validator."""
        schema: list[str] = []
        custom: list[str] = []
        checked = 0
        for name in self.scenarios():
            validator = StrictValidator()
            for e in self.wire.of(name):
                m = e.message
                if m is None or e.owner is not None:  # a line written as garbage on purpose
                    continue
                if e.direction == "from_agent":
                    validator.note_request(m)
                    continue
                answered = validator.method_of(m) if "method" not in m else None
                checked += 1
                for problem in validator.validate(m):
                    if m.get("method") == "initialize" and _judged_live(problem.path):
                        continue  # client-initialize and client-info say it
                    method = m.get("method") or answered or "response"
                    if problem.newer:
                        self.v.newer(f"{method} {problem}")
                        continue
                    what = f"[{name}] {method} {problem}"
                    (custom if problem.kind == "unknown-field" else schema).append(what)
        self.v.verdict(CLIENT_SCHEMA, distinct(schema), f"{checked} message(s) valid")
        self.v.verdict(CLIENT_CUSTOM_FIELDS, distinct(custom))

    def responses(self) -> None:
        """client-responses and client-notifications."""
        problems: list[tuple[str, str]] = []
        answered_notifications: list[str] = []
        for name in self.scenarios():
            agent = self.agents.get(name)
            ended = agent.input_ended_at if agent is not None else None
            answers = Answers(name)
            for e in self.wire.of(name):
                m = e.message
                if m is None or self.owner(e) is not None:
                    continue
                if e.direction == "from_agent":
                    if e.is_request:
                        answers.ask(e)
                    continue
                if "method" in m or not ("result" in m or "error" in m or "id" in m):
                    continue
                if m.get("id") is None:
                    if dict_of(m.get("error")).get("code") not in BAD_INPUT_CODES:
                        answered_notifications.append(f"[{name}] {_text(e.raw)}")
                    continue
                problems += answers.answer(m)
            open_until = ended if ended is not None else float("inf")
            for request in answers.unanswered():
                if open_until - request.time >= self.quick:
                    rid = (request.message or {}).get("id")
                    problems.append(
                        ("RPC-005", f"[{name}] {request.method} (id {rid!r}) never answered")
                    )
        self.v.verdict(CLIENT_RESPONSES, distinct(problems))
        self.v.verdict(CLIENT_NOTIFICATIONS, distinct(answered_notifications))

    def requests(self) -> None:
        """client-request-ids, client-order, client-gates, client-prompt-content, client-paths."""
        ids: list[str] = []
        order: list[tuple[str, str]] = []
        gates: list[tuple[str, str]] = []
        content: list[str] = []
        paths: list[str] = []
        for name in self.scenarios():
            agent = self.agents.get(name)
            asked: dict[Any, str] = {}
            setup: dict[str, list[WireEntry]] = {"initialize": [], "session": []}
            for e in self.wire.of(name):
                m = e.message or {}
                if e.direction == "to_agent" and e.is_request:
                    asked[id_key(m["id"])] = str(m["method"])
                elif e.direction == "from_agent" and e.is_response and "result" in m:
                    method = asked.get(id_key(m.get("id")))
                    if method == "initialize":
                        setup["initialize"].append(e)
                    elif method in _SESSION_SETUP:
                        setup["session"].append(e)

            initialize_sent = False
            for e in self.from_client(name):
                request = e.message
                sent = request.get("method") if request is not None else None
                if request is None or not isinstance(sent, str):
                    continue
                m, method = request, sent
                if "id" in m:
                    rid = m["id"]
                    if (
                        rid is None
                        or isinstance(rid, bool)
                        or not isinstance(rid, (int, float, str))
                    ):
                        ids.append(f"[{name}] {method} has id {short(rid)}")
                    elif isinstance(rid, float) and not rid.is_integer():
                        ids.append(f"[{name}] {method} has id {rid!r}")
                params = dict_of(m.get("params"))
                if method == "initialize":
                    initialize_sent = True
                elif method in _SESSION_SETUP or method == "session/prompt":
                    if not initialize_sent:
                        order.append(("INIT-001", f"[{name}] {method} before initialize"))
                    elif not _reached(agent, e, setup["initialize"]):
                        order.append(
                            ("SESS-001", f"[{name}] {method} before initialize was answered")
                        )
                    elif method == "session/prompt" and not _reached(agent, e, setup["session"]):
                        order.append(
                            ("PROMPT-001", f"[{name}] session/prompt before a session was set up")
                        )
                if method in _GATED:
                    gates.append((_GATED[method], f"[{name}] {method}, not advertised"))
                if method in _SESSION_SETUP:
                    if params.get("additionalDirectories"):
                        gates.append(("SESS-017", f"[{name}] {method} with additionalDirectories"))
                    for server in dicts(as_list(params.get("mcpServers")) or []):
                        kind = server.get("type")
                        if kind in ("http", "sse"):
                            gates.append(("SESS-026", f"[{name}] an {kind} MCP server"))
                    cwd = params.get("cwd")
                    if not isinstance(cwd, str) or not is_absolute(cwd):
                        paths.append(f"[{name}] {method} cwd {short(cwd)}")
                if method == "session/prompt":
                    for block in dicts(as_list(params.get("prompt")) or []):
                        kind = block.get("type")
                        if kind not in _BASELINE_BLOCKS:
                            content.append(f"[{name}] a {kind} block; the agent advertised none")
        self.v.verdict(CLIENT_REQUEST_IDS, distinct(ids))
        self.v.verdict(CLIENT_ORDER, distinct(order))
        self.v.verdict(CLIENT_GATES, distinct(gates))
        self.v.verdict(CLIENT_PROMPT_CONTENT, distinct(content))
        self.v.verdict(CLIENT_PATHS, distinct(paths))


def _reached(agent: ScriptedAgent | None, line: WireEntry, answers: list[WireEntry]) -> bool:
    """Whether one of ``answers`` may have reached the client before it wrote ``line``.

    Judged by the relay's own order (:meth:`ScriptedAgent.unseen`), not by when the lines
    reached the checker: an early request is only reported when it surely was early.
    """
    if agent is None:
        return any(answer.time < line.time for answer in answers)
    return any(not agent.unseen(line, answer) for answer in answers)


def _text(raw: bytes) -> str:
    return short(raw.decode("utf-8", "replace"), 100)
