"""The official TypeScript SDK client (tests/interop/peers/ts_client.mjs) driving agents
built with acpwire's high-level toolkit (``AgentApp``): the built-in demo agent
(``python -m acpwire.demo``, docs/demo.md) and ``examples/tool_agent.py``.

Each test runs one scenario (format in tests/interop/PEERS.md) and asserts on the
JSON lines the TS client prints. Events between the answers of two steps belong
to the later step (the agent sends a turn's updates before answering it, and the
client prints responses only after dispatching what it already read).
Skips when node or the SDK is unavailable.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

try:  # tests/ as a package (rootdir-relative imports)
    from . import sdk_install
except ImportError:  # rootdir-less "prepend" import mode: tests/interop is on sys.path
    import sdk_install  # type: ignore[no-redef]

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[2]
TOOL_AGENT = ROOT / "examples" / "tool_agent.py"
Event = dict[str, Any]


@pytest.fixture(scope="module", autouse=True)
def _ts_sdk() -> None:
    reason = sdk_install.ts_skip_reason()
    if reason is not None:
        pytest.skip(f"TypeScript SDK peers unavailable: {reason}")


def demo_agent(store: Path) -> list[str]:
    return [sys.executable, "-m", "acpwire.demo", "--store", str(store)]


def run_scenario(agent: list[str], scenario: dict[str, Any], timeout: float = 30) -> list[Event]:
    cmd = [
        *sdk_install.ts_client_command(),
        "--agent",
        shlex.join(agent),
        "--scenario",
        "-",
    ]
    proc = subprocess.run(
        cmd, input=json.dumps(scenario), capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"ts_client failed ({proc.returncode}):\n{proc.stderr}"
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert events and events[-1] == {"event": "done"}, f"{events[-1:]}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    return events


def scenario(cwd: Path, *steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "clientCapabilities": "full",
        "permission": "allow",
        "cwd": str(cwd),
        "steps": [{"call": "initialize", "protocolVersion": 1}, {"call": "session/new"}, *steps],
        **extra,
    }


class Run:
    """The events of one scenario, split by step."""

    def __init__(self, events: list[Event]) -> None:
        self.events = events
        self.steps: dict[int, list[Event]] = {}
        self.answers: dict[int, Event] = {}
        pending: list[Event] = []
        for event in events:
            if event["event"] in ("response", "error") and "step" in event:
                self.steps[event["step"]] = pending
                self.answers[event["step"]] = event
                pending = []
            else:
                pending.append(event)
        self.trailing = pending

    def result(self, step: int) -> Any:
        answer = self.answers[step]
        assert answer["event"] == "response", answer
        return answer["result"]

    def error(self, step: int) -> dict[str, Any]:
        answer = self.answers[step]
        assert answer["event"] == "error", answer
        return answer["error"]

    def updates(self, step: int, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            e["update"]
            for e in self.steps[step]
            if e["event"] == "update" and (kind is None or e["update"]["sessionUpdate"] == kind)
        ]

    def text(self, step: int) -> str:
        """The agent's message text during ``step``."""
        return "".join(u["content"]["text"] for u in self.updates(step, "agent_message_chunk"))

    def requests(self, step: int, method: str | None = None) -> list[Event]:
        return [
            e
            for e in self.steps[step]
            if e["event"] == "request" and (method is None or e["method"] == method)
        ]

    def tool_status(self, step: int) -> list[str]:
        """Every status the step's tool calls went through, in order."""
        return [u["status"] for u in self.updates(step) if "toolCallId" in u and "status" in u]


def workspace(root: Path) -> Path:
    root.mkdir()
    (root / "README.md").write_text("# Demo project\n\nTODO: write docs\n")
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return root


# ---------------------------------------------------------------------- the demo agent


def test_demo_agent_full_client(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    run = Run(
        run_scenario(
            demo_agent(tmp_path / "store.db"),
            scenario(
                ws,
                {"call": "session/prompt", "text": "help"},  # 2
                {"call": "session/prompt", "text": "read notes.txt 2 1"},  # 3
                {"call": "session/prompt", "text": "edit README.md Demo Sample"},  # 4
                # (quoted: unquoted, shlex turns `one\ntwo` into `onentwo`)
                {"call": "session/prompt", "text": r'write new/file.txt "one\ntwo"'},  # 5
                {"call": "session/prompt", "text": "run echo hi"},  # 6
                {"call": "session/prompt", "text": "plan"},  # 7
                {"call": "session/prompt", "text": "think deep thoughts here now"},  # 8
                {"call": "session/set_mode", "modeId": "code"},  # 9
                {"call": "session/prompt", "text": "write code.txt no questions"},  # 10
                {"call": "session/set_config_option", "configId": "mode", "value": "ask"},  # 11
                {"call": "session/set_config_option", "configId": "model", "value": "smart"},  # 12
                {"call": "session/prompt", "text": "elicit"},  # 13
                {"call": "session/prompt", "text": "slow 30", "cancelAfterMs": 500},  # 14
                {"call": "session/prompt", "text": "status"},  # 15
                {"call": "raw", "method": "no/such_method", "params": {}},  # 16
                {"call": "session/set_mode", "modeId": "nope"},  # 17
            ),
        )
    )
    init = run.result(0)
    assert init["protocolVersion"] == 1
    caps = init["agentCapabilities"]
    assert caps["loadSession"] is True
    assert {"list", "close", "delete", "resume"} <= set(caps["sessionCapabilities"])
    assert init["agentInfo"]["name"] == "acpwire-demo"

    new = run.result(1)
    sid = new["sessionId"]
    assert new["modes"]["currentModeId"] == "ask"
    assert [m["id"] for m in new["modes"]["availableModes"]] == ["ask", "code"]
    options = {o["id"]: o for o in new["configOptions"]}
    assert list(options) == ["mode", "model", "thought_level", "verbose"]
    assert options["model"]["category"] == "model" and options["verbose"]["type"] == "boolean"
    assert all(e["sessionId"] == sid for e in run.events if e["event"] == "update")

    # The command list is published right after session/new answers (so the TS client
    # may print it before or after that answer); help is one streamed message.
    (commands,) = run.updates(1, "available_commands_update") + run.updates(
        2, "available_commands_update"
    )
    assert {"help", "read", "edit", "run", "slow"} <= {
        c["name"] for c in commands["availableCommands"]
    }
    assert run.result(2) == {"stopReason": "end_turn"}
    chunks = run.updates(2, "agent_message_chunk")
    assert len(chunks) > 3 and len({c["messageId"] for c in chunks}) == 1
    assert "`read PATH [LINE [LIMIT]]`" in run.text(2)

    # read: through the client's fs, from line 2, one line.
    (read,) = run.requests(3, "fs/read_text_file")
    assert read["params"] == {
        "sessionId": sid,
        "path": str(ws / "notes.txt"),
        "line": 2,
        "limit": 1,
    }
    (call,) = run.updates(3, "tool_call")
    assert call["kind"] == "read" and call["locations"] == [
        {"path": str(ws / "notes.txt"), "line": 2}
    ]
    assert run.tool_status(3)[-1] == "completed"
    assert "beta" in run.text(3) and "alpha" not in run.text(3)

    # edit: diff, permission (allowed), written through the client.
    (permission,) = run.requests(4, "session/request_permission")
    kinds = {o["kind"] for o in permission["params"]["options"]}
    assert kinds == {"allow_once", "allow_always", "reject_once"}
    assert permission["answer"]["outcome"]["outcome"] == "selected"
    diff = permission["params"]["toolCall"]["content"][0]
    assert diff["type"] == "diff" and diff["oldText"].startswith("# Demo project")
    assert run.requests(4, "fs/write_text_file")
    assert (ws / "README.md").read_text() == "# Sample project\n\nTODO: write docs\n"
    assert run.tool_status(4)[-1] == "completed"

    # write: a new file (diff without old text), parent folder created by the client.
    (diff_update,) = [u for u in run.updates(5, "tool_call_update") if u.get("content")]
    assert diff_update["content"][0]["oldText"] is None
    assert (ws / "new" / "file.txt").read_text() == "one\ntwo\n"
    assert "was created through the client" in run.text(5)

    # run: a client terminal embedded in the tool call.
    methods = [e["method"] for e in run.requests(6)]
    assert methods == [
        "session/request_permission",
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    assert run.requests(6, "terminal/create")[0]["params"]["cwd"] == str(ws)
    assert any(
        c.get("type") == "terminal"
        for u in run.updates(6, "tool_call_update")
        for c in u.get("content") or []
    )
    assert "exit code 0" in run.text(6) and "hi" in run.text(6)

    # plan: four entries that end completed, with thoughts in between.
    plans = run.updates(7, "plan")
    assert [e["status"] for e in plans[0]["entries"]] == ["pending"] * 4
    assert [e["status"] for e in plans[-1]["entries"]] == ["completed"] * 4
    assert run.updates(7, "agent_thought_chunk")
    assert "TODO marker" in run.text(7)

    # think: thought chunks, then a message.
    thoughts = "".join(u["content"]["text"] for u in run.updates(8, "agent_thought_chunk"))
    assert "deep thoughts here" in thoughts

    # set_mode code: updates sent, and edits no longer ask.
    assert run.result(9) == {}
    assert run.updates(9, "current_mode_update") == [
        {"currentModeId": "code", "sessionUpdate": "current_mode_update"}
    ]
    assert not run.requests(10, "session/request_permission")
    assert (ws / "code.txt").read_text() == "no questions\n"

    # set_config_option: mode back to ask (a mode update too), then the model.
    assert run.updates(11, "current_mode_update")[0]["currentModeId"] == "ask"
    current = {o["id"]: o["currentValue"] for o in run.result(12)["configOptions"]}
    assert current == {"mode": "ask", "model": "smart", "thought_level": "low", "verbose": False}

    # elicit: a form; the TS client accepts {"name": "acp", "age": 3}.
    (form,) = run.requests(13, "elicitation/create")
    assert form["params"]["mode"] == "form"
    assert set(form["params"]["requestedSchema"]["properties"]) == {"name", "colour"}
    # Its canned answer misses the required colour and adds an unknown age: the
    # agent checks the answer instead of trusting it.
    assert "did not match the form" in run.text(13)
    assert "colour: required" in run.text(13) and "age: not a field of this form" in run.text(13)

    # slow + session/cancel: the tool call fails, the turn answers cancelled.
    assert run.result(14) == {"stopReason": "cancelled"}
    assert run.tool_status(14)[-1] == "failed"
    assert "the turn was cancelled" in run.text(14)

    # the session still works after the cancel, and remembers the options.
    assert run.result(15) == {"stopReason": "end_turn"}
    assert "`model` = `smart`" in run.text(15) and "forms (elicitation): yes" in run.text(15)

    assert run.error(16)["code"] == -32601
    assert run.error(17)["code"] == -32602


def test_demo_agent_permission_rejected(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    run = Run(
        run_scenario(
            demo_agent(tmp_path / "store.db"),
            scenario(
                ws,
                {"call": "session/prompt", "text": "edit README.md Demo Sample"},  # 2
                {"call": "session/prompt", "text": "write fresh.txt hello"},  # 3
                {"call": "session/prompt", "text": "run touch ran.txt"},  # 4
                permission="reject",
            ),
        )
    )
    for step in (2, 3, 4):
        assert run.result(step) == {"stopReason": "end_turn"}
        (permission,) = run.requests(step, "session/request_permission")
        assert permission["answer"] == {
            "outcome": {"outcome": "selected", "optionId": "reject_once"}
        }
        assert run.tool_status(step)[-1] == "failed"
        assert not run.requests(step, "fs/write_text_file")
        assert not run.requests(step, "terminal/create")
    assert (ws / "README.md").read_text() == "# Demo project\n\nTODO: write docs\n"
    assert not (ws / "fresh.txt").exists() and not (ws / "ran.txt").exists()
    assert "`README.md` was not changed" in run.text(2)
    assert "did not run" in run.text(4)


def test_demo_agent_empty_client_falls_back_to_disk(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    run = Run(
        run_scenario(
            demo_agent(tmp_path / "store.db"),
            scenario(
                ws,
                {"call": "session/prompt", "text": "read notes.txt"},  # 2
                {"call": "session/prompt", "text": "write made.txt on disk"},  # 3
                {"call": "session/prompt", "text": "run echo local"},  # 4
                {"call": "session/prompt", "text": "elicit"},  # 5
                {"call": "session/set_config_option", "configId": "verbose", "value": True},  # 6
                clientCapabilities="empty",
            ),
        )
    )
    assert run.result(0)["agentCapabilities"]["loadSession"] is True
    # Boolean options are only for clients that advertise them.
    assert [o["id"] for o in run.result(1)["configOptions"]] == ["mode", "model", "thought_level"]

    served = {e["method"] for e in run.events if e["event"] == "request"}
    assert served == {"session/request_permission"}  # no fs/*, terminal/*, elicitation
    assert "read from disk" in run.text(2) and "alpha" in run.text(2)
    assert (ws / "made.txt").read_text() == "on disk\n"
    assert "on disk (the client has no fs)" in run.text(3)
    assert "a local process" in run.text(4) and "local" in run.text(4)
    assert "does not take forms" in run.text(5)
    assert run.error(6)["code"] == -32602


def test_demo_agent_sessions_listed_and_loaded_by_a_second_process(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    store = tmp_path / "store.db"
    first = Run(
        run_scenario(
            demo_agent(store),
            scenario(
                ws,
                {"call": "session/prompt", "text": "read notes.txt"},  # 2
                {"call": "session/prompt", "text": "title Persisted session"},  # 3
                {"call": "session/set_mode", "modeId": "code"},  # 4
            ),
        )
    )
    sid = first.result(1)["sessionId"]

    second = Run(
        run_scenario(
            demo_agent(store),
            {
                "clientCapabilities": "full",
                "cwd": str(ws),
                "steps": [
                    {"call": "initialize", "protocolVersion": 1},  # 0
                    {"call": "session/list", "cwd": str(ws)},  # 1
                    {"call": "session/load", "sessionId": sid},  # 2
                    {"call": "session/prompt", "text": "mode"},  # 3
                    {"call": "session/load", "sessionId": "sess_unknown"},  # 4
                ],
            },
        )
    )
    (listed,) = second.result(1)["sessions"]
    assert listed["sessionId"] == sid and listed["title"] == "Persisted session"
    assert listed["cwd"] == str(ws)

    # The history is replayed before session/load answers.
    loaded = second.result(2)
    assert loaded["modes"]["currentModeId"] == "code"
    replay = second.updates(2)
    users = [u["content"]["text"] for u in replay if u["sessionUpdate"] == "user_message_chunk"]
    assert users == ["read notes.txt", "title Persisted session"]
    assert any(u["sessionUpdate"] == "tool_call" and u["kind"] == "read" for u in replay)
    assert "alpha" in second.text(2)
    # commands are re-published right after the load answers (printed before or after it)
    assert second.updates(2, "available_commands_update") + second.updates(
        3, "available_commands_update"
    )
    # the replayed messages keep their original ids
    first_ids = {u["messageId"] for u in first.updates(2, "agent_message_chunk")}
    assert first_ids <= {u.get("messageId") for u in second.updates(2, "agent_message_chunk")}

    assert "The mode is **code**" in second.text(3)
    assert second.error(4)["code"] == -32002


# ---------------------------------------------------------------------- examples/tool_agent.py


@pytest.fixture
def tool_agent(tmp_path: Path) -> list[str]:
    """A copy of the example, so its session store (next to the script) lands in tmp_path."""
    copy = tmp_path / "agent" / "tool_agent.py"
    copy.parent.mkdir()
    shutil.copy(TOOL_AGENT, copy)
    return [sys.executable, str(copy)]


def test_tool_agent_read_edit_run(tmp_path: Path, tool_agent: list[str]) -> None:
    ws = workspace(tmp_path / "ws")
    run = Run(
        run_scenario(
            tool_agent,
            scenario(
                ws,
                {"call": "session/prompt", "text": "notes.txt"},  # 2
                {"call": "session/prompt", "text": "notes.txt"},  # 3: already reviewed
                {"call": "session/new"},  # 4
                {"call": "session/set_config_option", "configId": "mode", "value": "auto"},  # 5
                {"call": "session/prompt", "text": "README.md"},  # 6
                {"call": "session/list"},  # 7
            ),
        )
    )
    init = run.result(0)
    assert init["agentInfo"]["name"] == "tool-agent"
    assert init["agentCapabilities"]["loadSession"] is True
    assert run.result(1)["modes"]["currentModeId"] == "ask"

    assert run.result(2) == {"stopReason": "end_turn"}
    methods = [e["method"] for e in run.requests(2)]
    assert methods == [
        "fs/read_text_file",
        "session/request_permission",
        "fs/write_text_file",
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    assert (ws / "notes.txt").read_text() == "alpha\nbeta\ngamma\n# reviewed by tool-agent\n"
    plans = run.updates(2, "plan")
    assert [e["status"] for e in plans[-1]["entries"]] == ["completed"] * 3
    kinds = [u["kind"] for u in run.updates(2, "tool_call")]
    assert kinds == ["read", "edit", "execute"]
    assert "`wc -l` says: 4" in run.text(2) and "(exit 0)" in run.text(2)
    (commands,) = run.updates(1, "available_commands_update") + run.updates(
        2, "available_commands_update"
    )
    assert [c["name"] for c in commands["availableCommands"]] == ["review"]

    assert not run.requests(3, "session/request_permission")
    assert "already marked as reviewed" in run.text(3)

    # mode auto (via the mode config option): the edit is written without asking.
    assert run.updates(5, "current_mode_update")[0]["currentModeId"] == "auto"
    assert not run.requests(6, "session/request_permission")
    assert (ws / "README.md").read_text().endswith("# reviewed by tool-agent\n")
    listed = run.result(7)["sessions"]
    assert {s["sessionId"] for s in listed} == {
        run.result(1)["sessionId"],
        run.result(4)["sessionId"],
    }


def test_tool_agent_rejected_edit_and_reload(tmp_path: Path, tool_agent: list[str]) -> None:
    ws = workspace(tmp_path / "ws")
    first = Run(
        run_scenario(
            tool_agent,
            scenario(ws, {"call": "session/prompt", "text": "notes.txt"}, permission="reject"),
        )
    )
    assert first.result(2) == {"stopReason": "end_turn"}
    assert not first.requests(2, "fs/write_text_file")
    assert (ws / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"
    edit = next(u for u in first.updates(2, "tool_call") if u["kind"] == "edit")
    statuses = [
        u["status"]
        for u in first.updates(2, "tool_call_update")
        if u["toolCallId"] == edit["toolCallId"] and "status" in u
    ]
    assert statuses[-1] == "failed"
    assert "`wc -l` says: 3" in first.text(2)  # the turn went on after the rejection

    sid = first.result(1)["sessionId"]
    second = Run(
        run_scenario(
            tool_agent,
            {
                "clientCapabilities": "full",
                "cwd": str(ws),
                "steps": [
                    {"call": "initialize", "protocolVersion": 1},
                    {"call": "session/load", "sessionId": sid},
                ],
            },
        )
    )
    replay = second.updates(1)
    assert [u["content"]["text"] for u in replay if u["sessionUpdate"] == "user_message_chunk"] == [
        "notes.txt"
    ]
    assert [u["kind"] for u in replay if u["sessionUpdate"] == "tool_call"] == [
        "read",
        "edit",
        "execute",
    ]
    # A replayed terminal is shown as its final output (the client released it).
    assert not any(
        c.get("type") == "terminal"
        for u in replay
        if u["sessionUpdate"] == "tool_call_update"
        for c in u.get("content") or []
    )
    assert "`wc -l` says: 3" in second.text(1)
    assert not second.requests(1)  # loading asks the client nothing
