"""The interop matrix: acpwire against the official TypeScript and Python SDKs, both roles.

Every cell is one scenario (``tests/interop/PEERS.md`` format) run by a peer CLIENT
process against a peer AGENT process over real stdio pipes:

==================  ===============================  ===============================
pairing             client                           agent
==================  ===============================  ===============================
acpwire->ts         peers/acpwire_client.py          peers/ts_agent.mjs (TS SDK 2.4.0)
ts->acpwire         peers/ts_client.mjs              peers/acpwire_agent.py
acpwire->pysdk      peers/acpwire_client.py          peers/pysdk_agent.py (0.12.1)
pysdk->acpwire      peers/pysdk_client.py            peers/acpwire_agent.py
acpwire->acpwire    peers/acpwire_client.py          peers/acpwire_agent.py (control)
==================  ===============================  ===============================

Runs are expensive (a node or Python start-up each), so the first test that needs
one starts every run of the matrix on a small thread pool and each test then waits
for its own run (a module-scoped cache); each scenario stays an individual test.

Every message acpwire emits in a run (the acpwire peers record both directions with
``--wire-log``) is validated against the official v1 JSON Schema, method by method
(``acpwire.testing.SchemaValidator``), except the deliberately malformed ``raw``
requests of the error scenarios. Messages from the SDK peers are validated too, but
only reported (``ACPWIRE_INTEROP_REPORT=<file>`` appends them as JSON lines): those
are the compatibility notes of ``docs/interop.md``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from waiting import TIMEOUT

try:  # tests/ as a package (rootdir-relative imports)
    from . import sdk_install
except ImportError:  # rootdir-less "prepend" import mode
    import sdk_install  # type: ignore[no-redef]

from acpwire.testing import SchemaValidator

pytestmark = pytest.mark.interop

PEERS = Path(__file__).resolve().parent / "peers"
RUN_TIMEOUT = 3 * TIMEOUT
"""Seconds one run may take (a whole peer run: several waits). The peers' `slow` turns and the scenarios' sleeps last 600 s,
so a cancel or kill that does not really stop them makes the run time out: no test
needs to look at a clock."""
WORKERS = int(os.environ.get("ACPWIRE_INTEROP_WORKERS", "4"))

Event = dict[str, Any]


# ---------------------------------------------------------------------------
# Pairings
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Pairing:
    client: str  # "acpwire" | "ts" | "pysdk"
    agent: str

    @property
    def id(self) -> str:
        return f"{self.client}->{self.agent}"

    def skip_reason(self) -> str | None:
        for side in {self.client, self.agent}:
            if side == "ts":
                reason = sdk_install.ts_skip_reason()
                if reason:
                    return f"TypeScript SDK peers unavailable: {reason}"
            if side == "pysdk":
                reason = sdk_install.py_sdk_skip_reason()
                if reason:
                    return f"Python SDK peers unavailable: {reason}"
        return None


PAIRINGS = [
    Pairing("acpwire", "ts"),
    Pairing("ts", "acpwire"),
    Pairing("acpwire", "pysdk"),
    Pairing("pysdk", "acpwire"),
    Pairing("acpwire", "acpwire"),
]


def agent_argv(kind: str, wire_log: Path) -> list[str]:
    if kind == "acpwire":
        return [sys.executable, str(PEERS / "acpwire_agent.py"), "--wire-log", str(wire_log)]
    if kind == "ts":
        return sdk_install.ts_agent_command()
    return sdk_install.pysdk_agent_command()


def client_argv(kind: str, wire_log: Path) -> list[str]:
    if kind == "acpwire":
        return [sys.executable, str(PEERS / "acpwire_client.py"), "--wire-log", str(wire_log)]
    if kind == "ts":
        return sdk_install.ts_client_command()
    return sdk_install.pysdk_client_command()


# ---------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------


@dataclass
class Run:
    pairing: Pairing
    cwd: Path
    scenario: dict[str, Any]
    events: list[Event]
    stderr: str
    seconds: float
    client_wire: list[tuple[str, Any]] = field(default_factory=list)
    agent_wire: list[tuple[str, Any]] = field(default_factory=list)

    # -- event helpers -------------------------------------------------------

    def answer(self, step: int) -> Event:
        found = [
            e for e in self.events if e["event"] in ("response", "error") and e.get("step") == step
        ]
        assert len(found) == 1, f"step {step}: {found}\n{self.describe()}"
        return found[0]

    def result(self, step: int) -> Any:
        event = self.answer(step)
        assert event["event"] == "response", f"step {step} failed: {event}\n{self.describe()}"
        return event["result"]

    def error(self, step: int) -> dict[str, Any]:
        event = self.answer(step)
        assert event["event"] == "error", f"step {step} did not fail: {event}"
        return event["error"]

    def index(self, step: int) -> int:
        return self.events.index(self.answer(step))

    def updates(
        self, kind: str | None = None, *, between: tuple[int, int] | None = None
    ) -> list[dict[str, Any]]:
        events = self.events
        if between is not None:
            lo = -1 if between[0] < 0 else self.index(between[0])
            events = events[lo + 1 : self.index(between[1])]
        return [
            e["update"]
            for e in events
            if e["event"] == "update" and (kind is None or e["update"].get("sessionUpdate") == kind)
        ]

    def messages(self, **kw: Any) -> list[str]:
        return [
            u["content"].get("text", "")
            for u in self.updates("agent_message_chunk", **kw)
            if isinstance(u.get("content"), dict)
        ]

    def requests(self, method: str) -> list[Event]:
        return [e for e in self.events if e["event"] == "request" and e["method"] == method]

    def notifications(self, method: str) -> list[Event]:
        return [e for e in self.events if e["event"] == "notification" and e["method"] == method]

    def describe(self) -> str:
        tail = "\n".join(json.dumps(e)[:300] for e in self.events[-40:])
        return f"[{self.pairing.id}] events:\n{tail}\nstderr tail:\n{self.stderr[-3000:]}"


def _read_wire(path: Path) -> list[tuple[str, Any]]:
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        item = json.loads(line)
        try:
            message = json.loads(item["line"])
        except ValueError:
            message = item["line"]
        entries.append((item["dir"], message))
    return entries


def execute(pairing: Pairing, scenario_def: Scenario, root: Path) -> Run:
    cwd = Path(tempfile.mkdtemp(prefix=f"{scenario_def.name}-", dir=root))
    scenario = scenario_def.build(cwd)
    scenario.setdefault("cwd", str(cwd))
    client_log, agent_log = cwd / ".client-wire.jsonl", cwd / ".agent-wire.jsonl"
    cmd = [
        *client_argv(pairing.client, client_log),
        "--agent",
        shlex.join(agent_argv(pairing.agent, agent_log)),
        "--scenario",
        "-",
    ]
    started = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(json.dumps(scenario), timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the peers and what they started
        proc.communicate()
        raise AssertionError(
            f"{scenario_def.name}[{pairing.id}] did not finish within {RUN_TIMEOUT} s "
            "(a turn or command that should have been stopped kept running?)"
        ) from None
    seconds = time.monotonic() - started
    events = []
    for line in stdout.splitlines():
        if line.strip():
            events.append(json.loads(line))
    run = Run(
        pairing,
        cwd,
        scenario,
        events,
        stderr,
        seconds,
        client_wire=_read_wire(client_log),
        agent_wire=_read_wire(agent_log),
    )
    assert proc.returncode == 0, f"peer client exited {proc.returncode}\n{run.describe()}"
    # pysdk_client.py keeps serving while it stops the agent, so a late answer to an
    # abandoned agent request may be printed after `done`; anything else must come first.
    assert {"event": "done"} in events, f"no done event\n{run.describe()}"
    late = events[events.index({"event": "done"}) + 1 :]
    assert all(e["event"] == "request" for e in late), f"events after done\n{run.describe()}"
    return run


class Matrix:
    """Starts every run on first use; tests wait for theirs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.Lock()
        self.futures: dict[tuple[str, str], Future[Run]] = {}
        self.pool: ThreadPoolExecutor | None = None

    def start_all(self) -> None:
        with self.lock:
            if self.pool is not None:
                return
            self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="interop")
            # In test order, so no test waits for runs queued after its own
            # (each test stays well inside the per-test timeout).
            for sc in SCENARIOS:
                for pairing in PAIRINGS:
                    if pairing.skip_reason() or sc.skip(pairing):
                        continue
                    self.futures[(pairing.id, sc.name)] = self.pool.submit(
                        execute, pairing, sc, self.root
                    )

    def get(self, pairing: Pairing, sc: Scenario) -> Run:
        self.start_all()
        return self.futures[(pairing.id, sc.name)].result(timeout=RUN_TIMEOUT * 4)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Any:
    m = Matrix(tmp_path_factory.mktemp("interop-matrix"))
    yield m
    m.close()


# ---------------------------------------------------------------------------
# Schema validation of the wire
# ---------------------------------------------------------------------------


def _deliberate(run: Run) -> list[tuple[str, Any]]:
    """(method, params) of the scenario's raw steps: malformed on purpose."""
    return [
        (step["method"], step.get("params") or {})
        for step in run.scenario["steps"]
        if step.get("call") == "raw"
    ]


def _validate(
    validator: SchemaValidator, sent: list[Any], received: list[Any], skip: list[tuple[str, Any]]
) -> list[str]:
    problems = []
    for m in received:
        validator.note_request(m)
    for m in sent:
        if isinstance(m, dict) and "method" in m and (m["method"], m.get("params") or {}) in skip:
            continue
        try:
            validator.validate(m)
        except Exception as exc:  # jsonschema.ValidationError or AssertionError
            text = str(exc).splitlines()[0][:300]
            problems.append(f"{text} in {json.dumps(m)[:400]}")
    return problems


def check_wire(run: Run, schema: dict[str, Any]) -> None:
    """acpwire's messages must be valid; the SDK peers' problems are only reported."""
    skip = _deliberate(run)
    ours: list[str] = []
    theirs: list[str] = []
    sides = []
    if run.pairing.client == "acpwire":
        sides.append(("client", run.client_wire))
    if run.pairing.agent == "acpwire":
        sides.append(("agent", run.agent_wire))
    assert sides and all(wire for _, wire in sides), f"no wire recorded\n{run.describe()}"
    for side, wire in sides:
        sent = [m for d, m in wire if d == "out"]
        received = [m for d, m in wire if d == "in"]
        ours += [
            f"acpwire {side}: {p}" for p in _validate(SchemaValidator(schema), sent, received, skip)
        ]
        peer = run.pairing.agent if side == "client" else run.pairing.client
        if peer != "acpwire":
            theirs += [
                f"{peer} {'agent' if side == 'client' else 'client'}: {p}"
                for p in _validate(SchemaValidator(schema), received, sent, skip)
            ]
    report = os.environ.get("ACPWIRE_INTEROP_REPORT")
    if report and theirs:
        with open(report, "a", encoding="utf-8") as f:
            for p in theirs:
                f.write(json.dumps({"pairing": run.pairing.id, "problem": p}) + "\n")
    for p in theirs:
        print(f"peer deviation: {p}")
    assert not ours, "acpwire sent messages that do not validate:\n" + "\n".join(ours)


# ---------------------------------------------------------------------------
# Scenarios
# ---------------------------------------------------------------------------

PNG_1x1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mP8/x8AAwMCAO+ip1sAAAAASUVORK5CYII="
)
WAV_EMPTY = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="
META = {"acpwire/test": {"nested": [1, 2], "text": "ü"}}


def init(version: int = 1) -> dict[str, Any]:
    return {"call": "initialize", "protocolVersion": version}


def base(cwd: Path, *steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "clientCapabilities": "full",
        "permission": "allow",
        "cwd": str(cwd),
        "steps": [init(), {"call": "session/new"}, *steps],
        **extra,
    }


def no_skip(p: Pairing) -> str | None:
    return None


def no_xfail(p: Pairing) -> str | None:
    return None


@dataclass
class Scenario:
    name: str
    build: Callable[[Path], dict[str, Any]]
    check: Callable[[Run], None]
    skip: Callable[[Pairing], str | None] = no_skip
    xfail: Callable[[Pairing], str | None] = no_xfail


SCENARIOS: list[Scenario] = []


def scenario(
    build: Callable[[Path], dict[str, Any]],
    *,
    skip: Callable[[Pairing], str | None] = no_skip,
    xfail: Callable[[Pairing], str | None] = no_xfail,
) -> Callable[[Callable[[Run], None]], Callable[[Run], None]]:
    def register(check: Callable[[Run], None]) -> Callable[[Run], None]:
        SCENARIOS.append(Scenario(check.__name__.removeprefix("check_"), build, check, skip, xfail))
        return check

    return register


# -- initialize ---------------------------------------------------------------


def _write_lines(cwd: Path, name: str = "f.txt", n: int = 5) -> Path:
    path = cwd / name
    path.write_text("".join(f"line {i}\n" for i in range(1, n + 1)), encoding="utf-8")
    return path


def _caps_probe(cwd: Path, caps: str) -> dict[str, Any]:
    _write_lines(cwd)
    return base(
        cwd,
        {"call": "session/prompt", "text": f"read {cwd / 'f.txt'}\nrun echo probe\nelicit"},
        clientCapabilities=caps,
    )


@scenario(lambda cwd: _caps_probe(cwd, "full"))
def check_initialize_full_capabilities(run: Run) -> None:
    init_result = run.result(0)
    assert init_result["protocolVersion"] == 1
    caps = init_result["agentCapabilities"]
    assert caps["loadSession"] is True
    assert "list" in caps["sessionCapabilities"]
    assert caps["promptCapabilities"] == {"image": True, "audio": True, "embeddedContext": True}
    assert "token" in [m["id"] for m in init_result["authMethods"]]
    assert init_result["agentInfo"]["name"]
    # the agent's _meta arrives untouched
    assert caps["_meta"]["acpwire/peer"]["commandLanguage"] is True
    assert run.result(2) == {"stopReason": "end_turn"}
    # with full client capabilities the agent uses the client for fs, terminals, elicitation
    (read,) = run.requests("fs/read_text_file")
    assert read["answer"]["content"].startswith("line 1\n")
    assert run.requests("terminal/create") and run.requests("terminal/release")
    (elicit,) = run.requests("elicitation/create")
    assert elicit["params"]["mode"] == "form"
    assert elicit["answer"] == {"action": "accept", "content": {"name": "acp", "age": 3}}


@scenario(lambda cwd: {**_caps_probe(cwd, "full"), "steps": [init(2), {"call": "session/new"}]})
def check_initialize_version_2_negotiates_1(run: Run) -> None:
    assert run.result(0)["protocolVersion"] == 1
    assert run.result(1)["sessionId"]


@scenario(lambda cwd: _caps_probe(cwd, "empty"))
def check_initialize_empty_capabilities(run: Run) -> None:
    assert run.result(0)["protocolVersion"] == 1
    assert run.result(2)["stopReason"] == "end_turn"
    # nothing gated by a client capability may be called
    for method in (
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "elicitation/create",
    ):
        assert not run.requests(method), f"{method} called without the capability\n{run.describe()}"
    text = "\n".join(run.messages())
    assert "line 1" in text  # the agent fell back to reading the disk itself
    assert "elicit:" in text and "unsupported" in text


# -- sessions -------------------------------------------------------------------


def _extra_dirs(cwd: Path) -> dict[str, Any]:
    extra = cwd / "extra"
    extra.mkdir()
    return {
        "clientCapabilities": "full",
        "permission": "allow",
        "cwd": str(cwd),
        "steps": [
            init(),
            {"call": "session/new", "additionalDirectories": [str(extra)]},
            {"call": "session/list", "cwd": str(cwd)},
            {"call": "session/prompt", "text": f"read {extra / 'x.txt'}"},
        ],
    }


def _prepare_extra(cwd: Path) -> dict[str, Any]:
    sc = _extra_dirs(cwd)
    (cwd / "extra" / "x.txt").write_text("in extra\n", encoding="utf-8")
    return sc


@scenario(_prepare_extra)
def check_session_additional_directories(run: Run) -> None:
    assert "additionalDirectories" in run.result(0)["agentCapabilities"]["sessionCapabilities"]
    sid = run.result(1)["sessionId"]
    (info,) = run.result(2)["sessions"]
    assert info["sessionId"] == sid
    assert info["additionalDirectories"] == [str(run.cwd / "extra")]
    # the client serves files of the additional directory too
    assert run.result(3)["stopReason"] == "end_turn"
    (read,) = run.requests("fs/read_text_file")
    assert "answer" in read, read
    assert "in extra" in "\n".join(run.messages())


@scenario(
    lambda cwd: base(
        cwd,
        {"call": "session/prompt", "text": "echo one\nuser two"},
        {"call": "session/load", "sessionId": "$last"},
    )
)
def check_session_load_replays_history(run: Run) -> None:
    sid = run.result(1)["sessionId"]
    assert run.result(2)["stopReason"] == "end_turn"
    original = run.updates(between=(1, 2))
    load = run.result(3)
    assert load["modes"]["currentModeId"] in ("ask", "code")
    replay = run.updates(between=(2, 3))  # everything replayed arrives BEFORE the load answer
    kinds = [u["sessionUpdate"] for u in replay]
    assert kinds[0] == "user_message_chunk", kinds
    assert replay[0]["content"]["text"] == "echo one\nuser two"
    assert [u["content"]["text"] for u in replay[1:]] == ["one", "two"]
    assert [u.get("messageId") for u in replay[1:]] == [u.get("messageId") for u in original]
    assert all(e["sessionId"] == sid for e in run.events if e["event"] == "update")


def _list(cwd: Path) -> dict[str, Any]:
    other = cwd / "other"
    other.mkdir()
    return {
        "clientCapabilities": "full",
        "permission": "allow",
        "cwd": str(cwd),
        "steps": [
            init(),
            {"call": "session/new"},
            {"call": "session/new"},
            {"call": "session/new"},
            {"call": "session/new", "cwd": str(other)},
            {"call": "session/list", "cwd": str(cwd)},
            {"call": "session/list", "cwd": str(cwd), "cursor": "2"},
            {"call": "session/list", "cwd": str(other)},
            {"call": "session/list"},
        ],
    }


@scenario(_list)
def check_session_list_cwd_and_cursor(run: Run) -> None:
    ids = [run.result(i)["sessionId"] for i in (1, 2, 3)]
    other = run.result(4)["sessionId"]
    page1, page2 = run.result(5), run.result(6)
    assert len(page1["sessions"]) == 2 and page1["nextCursor"]
    assert page2.get("nextCursor") is None and len(page2["sessions"]) == 1
    assert [x["sessionId"] for x in page1["sessions"] + page2["sessions"]] == ids
    assert all(x["cwd"] == str(run.cwd) for x in page1["sessions"] + page2["sessions"])
    assert [x["sessionId"] for x in run.result(7)["sessions"]] == [other]
    everything = run.result(8)
    assert len(everything["sessions"]) == 2 and everything["nextCursor"]


@scenario(
    lambda cwd: base(
        cwd,
        {"call": "session/close"},
        {"call": "session/prompt", "text": "echo closed"},
        {"call": "session/resume", "sessionId": "$last"},
        {"call": "session/prompt", "text": "echo back"},
    )
)
def check_session_close_and_resume(run: Run) -> None:
    caps = run.result(0)["agentCapabilities"]["sessionCapabilities"]
    assert "close" in caps and "resume" in caps
    assert run.result(2) == {}
    assert run.error(3)["code"] == -32002
    assert run.result(4) is not None
    assert run.result(5)["stopReason"] == "end_turn"
    assert run.messages() == ["back"]


def _pysdk_agent_has_no(method: str) -> Callable[[Pairing], str | None]:
    def skip(p: Pairing) -> str | None:
        if p.agent == "pysdk":
            return (
                f"agent-client-protocol 0.12.1 does not route {method} (its agent router has no "
                f"route for it, so the peer agent cannot implement or advertise it)"
            )
        return None

    return skip


@scenario(
    lambda cwd: base(
        cwd,
        {"call": "session/new"},
        {"call": "session/delete", "sessionId": "$last"},
        {"call": "session/list", "cwd": str(cwd)},
        {"call": "session/prompt", "text": "echo deleted"},
    ),
    skip=_pysdk_agent_has_no("session/delete"),
)
def check_session_delete(run: Run) -> None:
    assert "delete" in run.result(0)["agentCapabilities"]["sessionCapabilities"]
    first, second = run.result(1)["sessionId"], run.result(2)["sessionId"]
    assert run.result(3) == {}
    assert [x["sessionId"] for x in run.result(4)["sessions"]] == [first]
    assert run.error(5)["code"] == -32002
    assert second


# -- prompts and updates ----------------------------------------------------------

CONTENT_BLOCKS = [
    {"type": "text", "text": "echo blocks"},
    {"type": "image", "data": PNG_1x1, "mimeType": "image/png"},
    {"type": "audio", "data": WAV_EMPTY, "mimeType": "audio/wav"},
    {
        "type": "resource_link",
        "uri": "file:///tmp/readme.md",
        "name": "readme.md",
        "mimeType": "text/markdown",
    },
    {
        "type": "resource",
        "resource": {"uri": "file:///tmp/a.py", "text": "print(1)\n", "mimeType": "text/x-python"},
    },
    {
        "type": "resource",
        "resource": {
            "uri": "file:///tmp/b.bin",
            "blob": "AAEC",
            "mimeType": "application/octet-stream",
        },
    },
]


@scenario(
    lambda cwd: base(
        cwd,
        {"call": "session/prompt", "prompt": CONTENT_BLOCKS},
        {"call": "session/load", "sessionId": "$last"},
    )
)
def check_prompt_every_content_block(run: Run) -> None:
    assert run.result(2)["stopReason"] == "end_turn"
    assert run.messages(between=(1, 2)) == ["blocks"]
    replay = run.updates("user_message_chunk", between=(2, 3))
    assert [u["content"] for u in replay] == CONTENT_BLOCKS
    assert len({u["messageId"] for u in replay}) == 1


UPDATES_PROMPT = "echo hi\nthink pondering\nuser from agent\nstream 3\nplan\ntool\ncommands\nmode code\nconfig\ntitle Interop\nusage"


@scenario(lambda cwd: base(cwd, {"call": "session/prompt", "text": UPDATES_PROMPT}))
def check_every_session_update_kind(run: Run) -> None:
    assert run.result(2)["stopReason"] == "end_turn"
    kinds = [u["sessionUpdate"] for u in run.updates()]
    for kind in (
        "agent_message_chunk",
        "agent_thought_chunk",
        "user_message_chunk",
        "plan",
        "tool_call",
        "tool_call_update",
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
    ):
        assert kind in kinds, f"no {kind}: {kinds}"
    chunks = run.updates("agent_message_chunk")
    assert chunks[0]["content"] == {"type": "text", "text": "hi"} and chunks[0]["messageId"]
    stream = [c for c in chunks if c["content"]["text"].startswith("chunk ")]
    assert [c["content"]["text"] for c in stream] == ["chunk 0", "chunk 1", "chunk 2"]
    assert len({c["messageId"] for c in stream}) == 1  # one message in three chunks
    (thought,) = run.updates("agent_thought_chunk")
    assert thought["content"]["text"] == "pondering" and thought["messageId"]
    (user,) = run.updates("user_message_chunk")
    assert user["content"]["text"] == "from agent" and user["messageId"]
    (plan,) = run.updates("plan")
    assert [(e["priority"], e["status"]) for e in plan["entries"]] == [
        ("high", "pending"),
        ("medium", "in_progress"),
        ("low", "completed"),
    ]
    (call,) = run.updates("tool_call")
    assert (call["kind"], call["status"]) == ("other", "pending")
    progress = run.updates("tool_call_update")
    assert [u["status"] for u in progress] == ["in_progress", "completed"]
    assert set(progress[0]) <= {"sessionUpdate", "toolCallId", "status"}  # partial update
    assert progress[1]["content"][0]["type"] == "content"
    (commands,) = run.updates("available_commands_update")
    names = {c["name"]: c for c in commands["availableCommands"]}
    assert set(names) == {"help", "test"} and names["test"]["input"]["hint"]
    assert run.updates("current_mode_update")[0]["currentModeId"] == "code"
    (config,) = run.updates("config_option_update")
    assert [o["id"] for o in config["configOptions"]] == ["model"]
    (info,) = run.updates("session_info_update")
    assert info["title"] == "Interop" and info["updatedAt"]
    (usage,) = run.updates("usage_update")
    assert (usage["used"], usage["size"]) == (100, 1000)
    assert usage["cost"] == {"amount": 0.01, "currency": "USD"}


# -- permissions, fs, terminals ------------------------------------------------------


def _write_scenario(policy: str) -> Callable[[Path], dict[str, Any]]:
    def build(cwd: Path) -> dict[str, Any]:
        return base(
            cwd,
            {
                "call": "session/prompt",
                "text": f"write {cwd / 'sub' / 'new.txt'} hello world\necho after",
            },
            permission=policy,
        )

    return build


def _check_permission(run: Run, option_kind: str | None) -> None:
    (perm,) = run.requests("session/request_permission")
    params = perm["params"]
    assert params["toolCall"]["kind"] == "edit"
    kinds = {o["kind"]: o["optionId"] for o in params["options"]}
    assert {"allow_once", "allow_always", "reject_once"} <= set(kinds)
    (call,) = run.updates("tool_call")
    assert call["toolCallId"] == params["toolCall"]["toolCallId"]
    assert call["content"][0]["type"] == "diff"
    target = run.cwd / "sub" / "new.txt"
    if option_kind is None:
        assert perm["answer"] == {"outcome": {"outcome": "cancelled"}}
        assert run.result(2)["stopReason"] == "cancelled"
        assert "after" not in run.messages()
        assert not target.exists()
        return
    option = kinds[option_kind]
    assert perm["answer"] == {"outcome": {"outcome": "selected", "optionId": option}}
    assert run.result(2)["stopReason"] == "end_turn"
    statuses = [u.get("status") for u in run.updates("tool_call_update")]
    assert f"permission: {option}" in run.messages()
    if option_kind == "reject_once":
        assert statuses[-1] == "failed" and not target.exists()
        assert not run.requests("fs/write_text_file")
    else:
        assert statuses[-1] == "completed"
        assert target.read_text(encoding="utf-8") == "hello world"


@scenario(_write_scenario("allow"))
def check_permission_allow_once(run: Run) -> None:
    _check_permission(run, "allow_once")


@scenario(_write_scenario("always"))
def check_permission_allow_always(run: Run) -> None:
    _check_permission(run, "allow_always")


@scenario(_write_scenario("reject"))
def check_permission_reject(run: Run) -> None:
    _check_permission(run, "reject_once")


@scenario(_write_scenario("cancel-turn"))
def check_permission_cancelled_turn(run: Run) -> None:
    _check_permission(run, None)


def _read_scenario(cwd: Path) -> dict[str, Any]:
    _write_lines(cwd, n=6)
    return base(cwd, {"call": "session/prompt", "text": f"read {cwd / 'f.txt'} 2 3"})


@scenario(_read_scenario)
def check_fs_read_line_and_limit(run: Run) -> None:
    assert run.result(2)["stopReason"] == "end_turn"
    (read,) = run.requests("fs/read_text_file")
    assert read["params"]["line"] == 2 and read["params"]["limit"] == 3
    content = read["answer"]["content"]
    # three lines from line 2 (the TS client drops the last newline, acpwire keeps it)
    assert content.rstrip("\n") == "line 2\nline 3\nline 4"
    (call,) = run.updates("tool_call")
    assert call["kind"] == "read" and call["locations"][0]["path"] == str(run.cwd / "f.txt")
    assert content in run.messages()


@scenario(
    lambda cwd: base(
        cwd,
        {"call": "session/prompt", "text": f"write {cwd / 'made' / 'deep' / 'new.txt'} fresh file"},
    )
)
def check_fs_write_creates_file(run: Run) -> None:
    assert run.result(2)["stopReason"] == "end_turn"
    (write,) = run.requests("fs/write_text_file")
    target = run.cwd / "made" / "deep" / "new.txt"
    assert write["params"]["path"] == str(target) and write["params"]["content"] == "fresh file"
    assert write["answer"] == {}
    assert target.read_text(encoding="utf-8") == "fresh file"


def _terminal_methods(run: Run) -> list[str]:
    return [
        e["method"]
        for e in run.events
        if e["event"] == "request" and e["method"].startswith("terminal/")
    ]


@scenario(lambda cwd: base(cwd, {"call": "session/prompt", "text": "run echo hello interop"}))
def check_terminal_run(run: Run) -> None:
    assert run.result(2)["stopReason"] == "end_turn"
    assert _terminal_methods(run) == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    (create,) = run.requests("terminal/create")
    assert create["params"]["command"] == "echo" and create["params"]["args"] == [
        "hello",
        "interop",
    ]
    terminal_id = create["answer"]["terminalId"]
    assert any(
        c.get("type") == "terminal" and c.get("terminalId") == terminal_id
        for u in run.updates("tool_call_update")
        for c in (u.get("content") or [])
    )
    (waited,) = run.requests("terminal/wait_for_exit")
    assert waited["answer"]["exitCode"] == 0
    (output,) = run.requests("terminal/output")
    assert (
        output["answer"]["output"] == "hello interop\n" and output["answer"]["truncated"] is False
    )
    assert output["answer"]["exitStatus"]["exitCode"] == 0
    assert any(m.startswith("exit: 0") and "hello interop" in m for m in run.messages())


@scenario(lambda cwd: base(cwd, {"call": "session/prompt", "text": "kill sleep 600"}))
def check_terminal_kill(run: Run) -> None:
    assert run.result(2)["stopReason"] == "end_turn"
    assert _terminal_methods(run) == [
        "terminal/create",
        "terminal/kill",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    (waited,) = run.requests("terminal/wait_for_exit")
    assert waited["answer"].get("signal") == "SIGTERM" and waited["answer"].get("exitCode") is None
    assert any(m.startswith("killed: SIGTERM") for m in run.messages())


# -- cancellation -------------------------------------------------------------------


@scenario(
    lambda cwd: base(
        cwd,
        {"call": "session/prompt", "text": "echo started\nslow", "cancelAfterMs": 400},
        {"call": "session/prompt", "text": "echo alive"},
    ),
)
def check_session_cancel_mid_turn(run: Run) -> None:
    assert run.result(2) == {"stopReason": "cancelled"}
    assert run.messages(between=(1, 2)) == ["started"]
    assert run.result(3)["stopReason"] == "end_turn"
    assert run.messages(between=(2, 3)) == ["alive"]


@scenario(
    lambda cwd: base(
        cwd,
        {"call": "session/prompt", "text": "run sleep 600", "cancelAfterMs": 1000},
        {"call": "session/prompt", "text": "echo alive"},
    ),
)
def check_session_cancel_with_pending_client_request(run: Run) -> None:
    """session/cancel while the agent waits in terminal/wait_for_exit: the agent
    sends $/cancel_request for it (where its SDK can) and the turn ends cancelled."""
    assert run.result(2) == {"stopReason": "cancelled"}
    assert run.result(3)["stopReason"] == "end_turn"
    (create,) = run.requests("terminal/create")
    assert run.requests("terminal/release"), "the terminal was not released"
    if run.pairing.agent != "pysdk":  # the Python SDK has no way to send $/cancel_request
        cancels = run.notifications("$/cancel_request")
        assert cancels, run.describe()
        if run.pairing.client != "pysdk":  # ... nor to honour one
            (waited,) = run.requests("terminal/wait_for_exit")
            assert waited["error"]["code"] == -32800, waited
    assert create["answer"]["terminalId"]


def _cancel_request_skip(p: Pairing) -> str | None:
    if p.agent == "pysdk":
        return (
            "agent-client-protocol 0.12.1 cannot handle $/cancel_request: its router answers "
            "the notification with a logged 'Method not found' and the prompt keeps running "
            "(the `slow` turn would run to its end)"
        )
    return None


@scenario(
    lambda cwd: base(
        cwd,
        {"call": "session/prompt", "text": "echo started\nslow", "cancelRequestAfterMs": 400},
        {"call": "session/prompt", "text": "echo alive"},
    ),
    skip=_cancel_request_skip,
)
def check_cancel_request_in_flight(run: Run) -> None:
    if run.pairing.agent == "acpwire":
        # acpwire's engine cancels the handler and answers -32800
        assert run.error(2)["code"] == -32800
    else:
        # the TypeScript peer agent treats it like session/cancel (PEERS.md)
        assert run.result(2) == {"stopReason": "cancelled"}
    assert run.messages(between=(1, 2)) == ["started"]
    assert run.result(3)["stopReason"] == "end_turn"


# -- modes, config, auth ---------------------------------------------------------------


@scenario(
    lambda cwd: base(
        cwd,
        {"call": "session/set_mode", "modeId": "code"},
        {"call": "session/set_config_option", "configId": "model", "value": "smart"},
        {"call": "session/set_config_option", "configId": "model", "value": "bogus"},
        {"call": "session/set_mode", "modeId": "nope"},
        {"call": "session/prompt", "text": "config\nmode ask"},
        {"call": "session/load", "sessionId": "$last"},
    )
)
def check_set_mode_and_config_option(run: Run) -> None:
    new = run.result(1)
    assert new["modes"]["currentModeId"] == "ask"
    assert [m["id"] for m in new["modes"]["availableModes"]] == ["ask", "code"]
    (option,) = new["configOptions"]
    assert (option["id"], option["type"], option["currentValue"], option["category"]) == (
        "model",
        "select",
        "fast",
        "model",
    )
    assert run.result(2) == {}
    (smart,) = run.result(3)["configOptions"]
    assert smart["currentValue"] == "smart"
    assert run.error(4)["code"] == -32602
    assert run.error(5)["code"] == -32602
    assert run.result(6)["stopReason"] == "end_turn"
    (update,) = run.updates("config_option_update")
    assert update["configOptions"][0]["currentValue"] == "smart"
    assert run.updates("current_mode_update")[-1]["currentModeId"] == "ask"
    assert run.result(7)["modes"]["currentModeId"] == "ask"


@scenario(
    lambda cwd: {
        "clientCapabilities": "full",
        "cwd": str(cwd),
        "steps": [
            init(),
            {"call": "authenticate", "methodId": "token"},
            {"call": "authenticate", "methodId": "nope"},
            {"call": "session/new"},
        ],
    }
)
def check_authenticate(run: Run) -> None:
    assert [m["id"] for m in run.result(0)["authMethods"]] == ["token"]
    assert run.result(1) == {}
    assert run.error(2)["code"] == -32602
    assert run.result(3)["sessionId"]


@scenario(
    lambda cwd: {
        "clientCapabilities": "full",
        "cwd": str(cwd),
        "steps": [
            init(),
            {"call": "authenticate", "methodId": "token"},
            {"call": "logout"},
            {"call": "session/new"},
        ],
    },
    skip=_pysdk_agent_has_no("logout"),
)
def check_logout(run: Run) -> None:
    assert "logout" in run.result(0)["agentCapabilities"]["auth"]
    assert run.result(1) == {}
    assert run.result(2) == {}
    assert run.result(3)["sessionId"]


# -- extensions and _meta ----------------------------------------------------------


@scenario(
    lambda cwd: base(
        cwd,
        {"call": "ext", "method": "_acpwire/echo", "params": {"x": 1, "_meta": META}},
        {"call": "ext", "method": "_acpwire/unknown", "params": {}},
        {"call": "ext_notify", "method": "_acpwire/hello", "params": {"hello": True}},
        {"call": "session/prompt", "text": "ext\nmeta", "_meta": META},
    )
)
def check_extensions_and_meta(run: Run) -> None:
    assert run.result(2) == {"x": 1, "_meta": META}
    assert run.error(3)["code"] == -32601
    assert run.result(5)["stopReason"] == "end_turn"
    (ping,) = run.requests("_acpwire/ping")
    assert ping["params"] == {"n": 1} and ping["answer"] == {"n": 1}
    (note,) = run.notifications("_acpwire/note")
    assert note["params"] == {"n": 2}
    assert 'ext: {"n":1}' in run.messages()
    (meta_chunk,) = [u for u in run.updates("agent_message_chunk") if u.get("_meta")]
    assert meta_chunk["_meta"] == {"acpwire/test": {"nested": [1, 2]}}
    assert meta_chunk["content"]["text"] == "meta"


# -- errors --------------------------------------------------------------------------


@scenario(
    lambda cwd: base(
        cwd,
        {"call": "raw", "method": "no/such_method", "params": {}},
        {
            "call": "raw",
            "method": "session/prompt",
            "params": {"sessionId": 42, "prompt": "not a list"},
        },
        {"call": "raw", "method": "session/new", "params": {"mcpServers": []}},
        {"call": "session/prompt", "sessionId": "sess_does_not_exist", "text": "echo nobody"},
        {"call": "session/prompt", "text": "echo still fine"},
    )
)
def check_error_paths(run: Run) -> None:
    assert run.error(2)["code"] == -32601
    assert run.error(3)["code"] == -32602
    assert run.error(4)["code"] == -32602
    assert run.error(5)["code"] == -32002
    assert run.result(6)["stopReason"] == "end_turn"
    assert run.messages() == ["still fine"]


@scenario(
    lambda cwd: base(
        cwd,
        {"call": "session/prompt", "text": "refuse"},
        {"call": "session/prompt", "text": "fail"},
    )
)
def check_stop_reasons_and_failed_turn(run: Run) -> None:
    assert run.result(2) == {"stopReason": "refusal"}
    assert run.error(3)["code"] == -32603


# ---------------------------------------------------------------------------
# The tests
# ---------------------------------------------------------------------------

CELLS = [pytest.param(sc, p, id=f"{sc.name}[{p.id}]") for sc in SCENARIOS for p in PAIRINGS]


@pytest.mark.parametrize(("sc", "pairing"), CELLS)
def test_matrix(
    sc: Scenario,
    pairing: Pairing,
    matrix: Matrix,
    official_schema: dict[str, Any],
    request: pytest.FixtureRequest,
) -> None:
    reason = pairing.skip_reason() or sc.skip(pairing)
    if reason:
        print(f"SKIP {sc.name}[{pairing.id}]: {reason}")
        pytest.skip(reason)
    xfail = sc.xfail(pairing)
    if xfail:
        request.applymarker(pytest.mark.xfail(reason=xfail, strict=True))
    run = matrix.get(pairing, sc)
    sc.check(run)
    check_wire(run, official_schema)
