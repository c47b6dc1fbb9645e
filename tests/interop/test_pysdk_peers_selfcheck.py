"""Self-check of the Python-SDK interop peers: pysdk_client.py driving pysdk_agent.py.

Both peers run on the official ``agent-client-protocol==0.12.1`` in its own venv
(``.cache/pysdk-venv``); this checks that they honour the contract of
``tests/interop/PEERS.md`` with each other (and pins the documented SDK
deviations), so the acpwire interop tests can trust them. Skips when the venv
cannot be created.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

try:  # tests/ as a package (rootdir-relative imports)
    from . import sdk_install  # type: ignore[attr-defined]
except ImportError:  # rootdir-less "prepend" import mode: tests/interop is on sys.path
    try:
        import sdk_install  # type: ignore[no-redef]
    except ImportError:
        sdk_install = None  # type: ignore[assignment]

pytestmark = pytest.mark.interop

Event = dict[str, Any]

PEERS = Path(__file__).resolve().parent / "peers"
ROOT = Path(__file__).resolve().parents[2]
PYSDK_VENV = ROOT / ".cache" / "pysdk-venv"


def _local_py_sdk() -> tuple[Path | None, str | None]:
    """Fallback when tests/interop/sdk_install.py is not importable: same venv, same way."""
    python = PYSDK_VENV / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    check = [str(python), "-c", "import acp"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python, None
    cmds = []
    if not python.exists():
        cmds.append([str(ROOT / ".venv" / "bin" / "python"), "-m", "venv", str(PYSDK_VENV)])
    cmds.append([str(python), "-m", "pip", "install", "--quiet", "agent-client-protocol==0.12.1"])
    for cmd in cmds:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"`{' '.join(cmd)}` failed: {exc}"
        if proc.returncode != 0:
            return None, f"`{' '.join(cmd)}` failed: {(proc.stderr or proc.stdout)[-800:]}"
    if subprocess.run(check, capture_output=True).returncode != 0:
        return None, "agent-client-protocol==0.12.1 installed but `import acp` fails"
    return python, None


_PYTHON: Path | None = None


@pytest.fixture(scope="module", autouse=True)
def _py_sdk() -> None:
    global _PYTHON
    if sdk_install is not None and hasattr(sdk_install, "py_sdk_python"):
        python = sdk_install.py_sdk_python()
        reason = None if python is not None else sdk_install.py_sdk_skip_reason()
    else:
        python, reason = _local_py_sdk()
    if python is None:
        pytest.skip(f"Python SDK peers unavailable (cannot create .cache/pysdk-venv): {reason}")
    _PYTHON = Path(python)


def agent_command() -> list[str]:
    assert _PYTHON is not None
    return [str(_PYTHON), str(PEERS / "pysdk_agent.py")]


def run_client(
    scenario: dict[str, Any], agent: list[str] | None = None, timeout: float = 20
) -> subprocess.CompletedProcess[str]:
    assert _PYTHON is not None
    cmd = [
        str(_PYTHON),
        str(PEERS / "pysdk_client.py"),
        "--agent",
        shlex.join(agent or agent_command()),
        "--scenario",
        "-",
    ]
    return subprocess.run(
        cmd, input=json.dumps(scenario), capture_output=True, text=True, timeout=timeout
    )


def run_scenario(scenario: dict[str, Any]) -> list[Event]:
    proc = run_client(scenario)
    assert proc.returncode == 0, f"pysdk_client failed ({proc.returncode}):\n{proc.stderr}"
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert events, f"no output; stderr:\n{proc.stderr}"
    assert events[-1] == {"event": "done"}, events[-1]
    return events


def base_scenario(cwd: Path, *steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "clientCapabilities": "full",
        "permission": "allow",
        "cwd": str(cwd),
        "steps": [{"call": "initialize", "protocolVersion": 1}, {"call": "session/new"}, *steps],
        **extra,
    }


def response(events: list[Event], step: int) -> Event:
    found = [e for e in events if e["event"] in ("response", "error") and e.get("step") == step]
    assert len(found) == 1, f"step {step}: {found}"
    return found[0]


def updates(events: list[Event], kind: str | None = None) -> list[dict[str, Any]]:
    return [
        e["update"]
        for e in events
        if e["event"] == "update" and (kind is None or e["update"]["sessionUpdate"] == kind)
    ]


def messages(events: list[Event]) -> list[str]:
    return [u["content"]["text"] for u in updates(events, "agent_message_chunk")]


def requests(events: list[Event], method: str) -> list[Event]:
    return [e for e in events if e["event"] == "request" and e["method"] == method]


def index_of(events: list[Event], predicate: Any) -> int:
    for i, event in enumerate(events):
        if predicate(event):
            return i
    raise AssertionError("no such event")


def test_echo_plan_tool(tmp_path: Path) -> None:
    events = run_scenario(
        base_scenario(
            tmp_path,
            {"call": "session/prompt", "text": "echo hello\nstream 2\nplan\ntool\nbogus 1"},
        )
    )
    init = response(events, 0)["result"]
    assert init["protocolVersion"] == 1
    caps = init["agentCapabilities"]
    assert caps["loadSession"] is True
    assert set(caps["sessionCapabilities"]) == {"list", "resume", "close", "additionalDirectories"}
    assert [m["id"] for m in init["authMethods"]] == ["token"]

    new = response(events, 1)["result"]
    session_id = new["sessionId"]
    assert new["modes"]["currentModeId"] == "ask"
    assert [m["id"] for m in new["modes"]["availableModes"]] == ["ask", "code"]
    assert caps["_meta"]["acpwire/peer"]["sdk"] == "python"
    (model,) = new["configOptions"]
    assert (model["id"], model["type"], model["category"], model["currentValue"]) == (
        "model",
        "select",
        "model",
        "fast",
    )

    assert response(events, 2)["result"] == {"stopReason": "end_turn"}
    assert all(e["sessionId"] == session_id for e in events if e["event"] == "update")

    chunks = updates(events, "agent_message_chunk")
    assert chunks[0]["content"] == {"type": "text", "text": "hello"}
    assert chunks[0]["messageId"]
    assert chunks[1]["messageId"] == chunks[2]["messageId"] != chunks[0]["messageId"]
    assert messages(events) == ["hello", "chunk 0", "chunk 1", "unknown command: bogus 1"]

    (plan,) = updates(events, "plan")
    assert [(e["priority"], e["status"]) for e in plan["entries"]] == [
        ("high", "pending"),
        ("medium", "in_progress"),
        ("low", "completed"),
    ]
    (call,) = updates(events, "tool_call")
    assert (call["toolCallId"], call["kind"], call["status"]) == ("t1", "other", "pending")
    tool_updates = updates(events, "tool_call_update")
    assert [u["status"] for u in tool_updates] == ["in_progress", "completed"]
    assert set(tool_updates[0]) == {"sessionUpdate", "toolCallId", "status"}  # partial update
    assert tool_updates[-1]["content"][0] == {
        "type": "content",
        "content": {"type": "text", "text": "tool done"},
    }

    # Every update of the turn is printed before the prompt's response.
    last_update = max(i for i, e in enumerate(events) if e["event"] == "update")
    assert last_update < index_of(events, lambda e: e.get("step") == 2)


@pytest.mark.parametrize(
    ("policy", "option", "written"), [("allow", "allow", True), ("reject", "reject", False)]
)
def test_permission_and_write(tmp_path: Path, policy: str, option: str, written: bool) -> None:
    target = tmp_path / "sub" / "out.txt"
    events = run_scenario(
        base_scenario(
            tmp_path,
            {"call": "session/prompt", "text": f"write {target} hello world"},
            permission=policy,
        )
    )
    assert response(events, 2)["result"] == {"stopReason": "end_turn"}
    (perm,) = requests(events, "session/request_permission")
    assert {o["optionId"]: o["kind"] for o in perm["params"]["options"]} == {
        "allow": "allow_once",
        "always": "allow_always",
        "reject": "reject_once",
    }
    assert perm["params"]["toolCall"]["toolCallId"] == "t1"
    assert perm["answer"] == {"outcome": {"outcome": "selected", "optionId": option}}
    (call,) = updates(events, "tool_call")
    assert call["kind"] == "edit"
    # The SDK drops None fields when serializing, so a new file's diff has no "oldText" key.
    assert call["content"] == [{"type": "diff", "path": str(target), "newText": "hello world"}]
    assert messages(events) == [f"permission: {option}"]
    statuses = [u["status"] for u in updates(events, "tool_call_update")]
    if written:
        assert target.read_text() == "hello world"
        assert statuses == ["in_progress", "completed"]
        (write,) = requests(events, "fs/write_text_file")
        assert write["params"] == {
            "sessionId": perm["params"]["sessionId"],
            "path": str(target),
            "content": "hello world",
        }
        assert write["answer"] == {}
    else:
        assert not target.exists()
        assert statuses == ["failed"]
        assert requests(events, "fs/write_text_file") == []


def test_permission_cancel_turn_and_read(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("one\ntwo\nthree\n")
    target = tmp_path / "never.txt"
    events = run_scenario(
        base_scenario(
            tmp_path,
            {"call": "session/prompt", "text": "read f.txt 2 1"},
            {"call": "session/prompt", "text": f"write {target} x\necho not reached"},
            permission="cancel-turn",
        )
    )
    assert response(events, 2)["result"] == {"stopReason": "end_turn"}
    (read,) = requests(events, "fs/read_text_file")
    assert read["params"]["path"] == str(tmp_path / "f.txt")
    assert (read["params"]["line"], read["params"]["limit"]) == (2, 1)
    assert read["answer"] == {"content": "two"}
    (call, _) = updates(events, "tool_call")
    assert call["kind"] == "read"
    assert call["locations"] == [{"path": str(tmp_path / "f.txt"), "line": 2}]

    assert response(events, 3)["result"] == {"stopReason": "cancelled"}
    (perm,) = requests(events, "session/request_permission")
    assert perm["answer"] == {"outcome": {"outcome": "cancelled"}}
    assert messages(events) == ["two", "permission: cancelled"]
    assert not target.exists()


def test_terminal_run_and_kill(tmp_path: Path) -> None:
    events = run_scenario(
        base_scenario(tmp_path, {"call": "session/prompt", "text": "run echo hi\nkill sleep 600"})
    )
    assert response(events, 2)["result"] == {"stopReason": "end_turn"}
    texts = messages(events)
    assert "exit: 0 output: hi" in texts
    assert "killed: SIGTERM" in texts
    creates = requests(events, "terminal/create")
    assert [(c["params"]["command"], c["params"]["args"]) for c in creates] == [
        ("echo", ["hi"]),
        ("sleep", ["600"]),
    ]
    assert creates[0]["params"]["cwd"] == str(tmp_path)
    waits = requests(events, "terminal/wait_for_exit")
    assert [w["answer"] for w in waits] == [{"exitCode": 0}, {"signal": "SIGTERM"}]
    outputs = requests(events, "terminal/output")
    assert outputs[0]["answer"] == {
        "output": "hi\n",
        "truncated": False,
        "exitStatus": {"exitCode": 0},
    }
    assert len(requests(events, "terminal/kill")) == 1
    assert len(requests(events, "terminal/release")) == 2
    assert [c["kind"] for c in updates(events, "tool_call")] == ["execute", "execute"]
    assert any(
        u.get("content") == [{"type": "terminal", "terminalId": creates[0]["answer"]["terminalId"]}]
        for u in updates(events, "tool_call_update")
    )


def test_slow_turn_cancelled(tmp_path: Path) -> None:
    events = run_scenario(
        base_scenario(
            tmp_path,
            {
                "call": "session/prompt",
                "text": "echo before\nslow\necho after",
                "cancelAfterMs": 300,
            },
            {"call": "session/prompt", "text": "echo again"},
        )
    )
    assert response(events, 2)["result"] == {"stopReason": "cancelled"}
    assert response(events, 3)["result"] == {"stopReason": "end_turn"}
    assert messages(events) == ["before", "again"]


def test_cancel_request_is_ignored_by_the_sdk(tmp_path: Path) -> None:
    # SDK 0.12.1 has no $/cancel_request support: the turn runs to its end ("slow 1" = 1 s).
    events = run_scenario(
        base_scenario(
            tmp_path,
            {"call": "session/prompt", "text": "slow 1\necho after", "cancelRequestAfterMs": 200},
        )
    )
    assert response(events, 2)["result"] == {"stopReason": "end_turn"}
    assert messages(events) == ["after"]


def test_session_list_load_resume_close(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    events = run_scenario(
        base_scenario(
            tmp_path,
            {"call": "session/new"},  # 2
            {"call": "session/new", "cwd": str(other)},  # 3
            {"call": "session/new"},  # 4
            {"call": "session/prompt", "text": "echo remembered\ntitle Third"},  # 5
            {"call": "session/list", "cwd": str(tmp_path)},  # 6
            {"call": "session/list", "cwd": str(tmp_path), "cursor": "$next"},  # 7
            {"call": "session/load", "sessionId": "$last"},  # 8
            {"call": "session/resume", "sessionId": "$last"},  # 9
            {"call": "session/set_mode", "modeId": "code"},  # 10
            {"call": "session/set_config_option", "configId": "model", "value": "smart"},  # 11
            {"call": "session/close"},  # 12
            {"call": "session/prompt", "text": "echo closed"},  # 13
            {"call": "session/delete", "sessionId": "$last"},  # 14
            {"call": "session/list"},  # 15
        )
    )
    ids = [response(events, i)["result"]["sessionId"] for i in (1, 2, 3, 4)]
    last = ids[-1]
    page1 = response(events, 6)["result"]
    assert [s["sessionId"] for s in page1["sessions"]] == [ids[0], ids[1]]
    assert page1["nextCursor"] == "2"
    page2 = response(events, 7)["result"]
    assert [s["sessionId"] for s in page2["sessions"]] == [last]
    assert page2["sessions"][0]["title"] == "Third"
    assert page2["sessions"][0]["cwd"] == str(tmp_path)
    assert "nextCursor" not in page2

    load_at = index_of(events, lambda e: e.get("step") == 8)
    replay = [
        (e["update"]["sessionUpdate"], e["update"]["content"]["text"])
        for e in events[index_of(events, lambda e: e.get("step") == 7) + 1 : load_at]
        if e["event"] == "update"
    ]
    assert replay == [
        ("user_message_chunk", "echo remembered\ntitle Third"),
        ("agent_message_chunk", "remembered"),
    ]
    assert response(events, 8)["result"]["modes"]["currentModeId"] == "ask"
    resume_at = index_of(events, lambda e: e.get("step") == 9)
    assert not [e for e in events[load_at + 1 : resume_at] if e["event"] == "update"]
    assert response(events, 9)["result"]["configOptions"][0]["currentValue"] == "fast"

    assert response(events, 10)["result"] == {}
    assert response(events, 11)["result"]["configOptions"][0]["currentValue"] == "smart"
    assert response(events, 12)["result"] == {}
    assert response(events, 13)["error"]["code"] == -32002
    # No session/delete route in SDK 0.12.1.
    assert response(events, 14)["error"]["code"] == -32601
    listed = response(events, 15)["result"]
    assert [s["sessionId"] for s in listed["sessions"]] == [ids[0], ids[1]]
    assert listed["nextCursor"] == "2"


def test_extensions_elicitation_and_errors(tmp_path: Path) -> None:
    events = run_scenario(
        base_scenario(
            tmp_path,
            {"call": "ext", "method": "_acpwire/echo", "params": {"x": 1}},  # 2
            {"call": "ext_notify", "method": "_acpwire/hello", "params": {}},  # 3 (no event)
            {"call": "raw", "method": "no/such_method", "params": {}},  # 4
            {
                "call": "session/prompt",
                "text": "ext\nmeta\nelicit\nusage\nrefuse\necho unreachable",
            },  # 5
            {"call": "session/prompt", "text": "fail"},  # 6
            {"call": "authenticate", "methodId": "token"},  # 7
            {"call": "logout"},  # 8
        )
    )
    assert response(events, 2)["result"] == {"x": 1}
    assert not [e for e in events if e.get("step") == 3]
    assert response(events, 4)["error"]["code"] == -32601
    assert response(events, 5)["result"] == {"stopReason": "refusal"}
    assert response(events, 6)["error"]["code"] == -32603
    assert response(events, 7)["result"] == {}
    assert response(events, 8)["error"]["code"] == -32601  # logout is not routed by SDK 0.12.1
    (ping,) = requests(events, "_acpwire/ping")
    assert ping["params"] == {"n": 1}
    texts = messages(events)
    assert 'ext: {"n":1}' in texts
    assert 'elicit: accept {"name":"acp","age":3}' in texts
    assert "unreachable" not in texts
    note = [e for e in events if e["event"] == "notification"]
    assert note == [{"event": "notification", "method": "_acpwire/note", "params": {"n": 2}}]
    (meta,) = [u for u in updates(events, "agent_message_chunk") if u["content"]["text"] == "meta"]
    assert meta["_meta"] == {"acpwire/test": {"nested": [1, 2]}}
    (elicit,) = requests(events, "elicitation/create")
    assert elicit["params"]["mode"] == "form"
    assert set(elicit["params"]["requestedSchema"]["properties"]) == {"name", "age"}
    (usage,) = updates(events, "usage_update")
    assert (usage["used"], usage["size"], usage["cost"]) == (
        100,
        1000,
        {"amount": 0.01, "currency": "USD"},
    )


def test_empty_capabilities_and_version_negotiation(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("disk\n")
    events = run_scenario(
        {
            "clientCapabilities": "empty",
            "cwd": str(tmp_path),
            "steps": [
                {"call": "initialize", "protocolVersion": 2},
                {"call": "session/new"},
                {"call": "session/prompt", "text": "elicit\nmode code\nread f.txt\nrun echo local"},
            ],
        }
    )
    assert response(events, 0)["result"]["protocolVersion"] == 1
    assert response(events, 2)["result"] == {"stopReason": "end_turn"}
    # No capabilities advertised: the agent neither asks nor uses fs/terminal methods.
    assert requests(events, "elicitation/create") == []
    assert requests(events, "fs/read_text_file") == []
    assert requests(events, "terminal/create") == []
    assert updates(events, "current_mode_update") == [
        {"sessionUpdate": "current_mode_update", "currentModeId": "code"}
    ]
    texts = messages(events)
    assert "disk\n" in texts
    assert "permission: allow" in texts
    assert "run failed: client has no terminal capability" in texts
    assert updates(events, "tool_call_update")[-1]["status"] == "failed"


def test_client_fails_when_agent_dies() -> None:
    proc = run_client({"steps": [{"call": "initialize"}]}, agent=["false"])
    assert proc.returncode != 0
    assert "pysdk_client:" in proc.stderr
    assert '"done"' not in proc.stdout
