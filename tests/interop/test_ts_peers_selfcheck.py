"""Self-check of the TypeScript-SDK interop peers: ts_client.mjs driving ts_agent.mjs.

Both peers are built on the official ``@agentclientprotocol/sdk@2.4.0``; this only
checks that they honour the contract of ``tests/interop/PEERS.md`` with each other,
so the acpwire interop tests can trust them. Skips when node/npm are unavailable.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from waiting import TIMEOUT

try:  # tests/ as a package (rootdir-relative imports)
    from . import sdk_install
except ImportError:  # rootdir-less "prepend" import mode: tests/interop is on sys.path
    import sdk_install  # type: ignore[no-redef]

pytestmark = pytest.mark.interop

Event = dict[str, Any]


@pytest.fixture(scope="module", autouse=True)
def _ts_sdk() -> None:
    reason = sdk_install.ts_skip_reason()
    if reason is not None:
        pytest.skip(f"TypeScript SDK peers unavailable: {reason}")


def run_scenario(
    scenario: dict[str, Any], agent: list[str] | None = None, timeout: float = 20
) -> list[Event]:
    cmd = [
        *sdk_install.ts_client_command(),
        "--agent",
        shlex.join(agent or sdk_install.ts_agent_command()),
        "--scenario",
        "-",
    ]
    proc = subprocess.run(
        cmd, input=json.dumps(scenario), capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, f"ts_client failed ({proc.returncode}):\n{proc.stderr}"
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert events, f"no output; stderr:\n{proc.stderr}"
    assert events[-1] == {"event": "done"}, events[-1]
    return events


def base_scenario(cwd: Path, *steps: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "clientCapabilities": "full",
        "permission": "allow",
        "cwd": str(cwd),
        "steps": [
            {"call": "initialize", "protocolVersion": 1},
            {"call": "session/new"},
            *steps,
        ],
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


def test_initialize_echo_plan_tool(tmp_path: Path) -> None:
    events = run_scenario(
        base_scenario(
            tmp_path, {"call": "session/prompt", "text": "echo hello\nplan\ntool\nbogus 1"}
        )
    )
    init = response(events, 0)["result"]
    assert init["protocolVersion"] == 1
    assert init["agentCapabilities"]["loadSession"] is True
    assert {"list", "resume", "close", "delete"} <= set(
        init["agentCapabilities"]["sessionCapabilities"]
    )
    assert [m["id"] for m in init["authMethods"]] == ["token"]

    new = response(events, 1)["result"]
    session_id = new["sessionId"]
    assert new["modes"]["currentModeId"] == "ask"
    assert [o["id"] for o in new["configOptions"]] == ["model"]

    assert response(events, 2)["result"] == {"stopReason": "end_turn"}
    assert all(e["sessionId"] == session_id for e in events if e["event"] == "update")

    chunks = updates(events, "agent_message_chunk")
    assert chunks[0]["content"] == {"type": "text", "text": "hello"}
    assert chunks[0]["messageId"]
    assert messages(events)[-1] == "unknown command: bogus 1"

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
    assert tool_updates[-1]["content"][0]["type"] == "content"

    # Every update of the turn is printed before the prompt's response.
    last_update = max(i for i, e in enumerate(events) if e["event"] == "update")
    assert last_update < index_of(events, lambda e: e.get("step") == 2)


@pytest.mark.parametrize(
    ("policy", "option", "written"), [("allow", "allow", True), ("reject", "reject", False)]
)
def test_permission_and_write(tmp_path: Path, policy: str, option: str, written: bool) -> None:
    target = tmp_path / "out.txt"
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
    assert perm["answer"] == {"outcome": {"outcome": "selected", "optionId": option}}
    (call,) = updates(events, "tool_call")
    assert call["kind"] == "edit"
    assert call["content"][0] == {
        "type": "diff",
        "path": str(target),
        "oldText": None,
        "newText": "hello world",
    }
    assert f"permission: {option}" in messages(events)
    final_status = updates(events, "tool_call_update")[-1]["status"]
    if written:
        assert target.read_text() == "hello world"
        assert final_status == "completed"
        (write,) = requests(events, "fs/write_text_file")
        assert write["params"]["content"] == "hello world"
    else:
        assert not target.exists()
        assert final_status == "failed"
        assert requests(events, "fs/write_text_file") == []


def test_permission_cancel_turn(tmp_path: Path) -> None:
    target = tmp_path / "never.txt"
    events = run_scenario(
        base_scenario(
            tmp_path,
            {"call": "session/prompt", "text": f"write {target} x\necho not reached"},
            permission="cancel-turn",
        )
    )
    assert response(events, 2)["result"] == {"stopReason": "cancelled"}
    assert requests(events, "session/request_permission")[0]["answer"] == {
        "outcome": {"outcome": "cancelled"}
    }
    assert "permission: cancelled" in messages(events)
    assert "not reached" not in messages(events)
    assert not target.exists()


def test_read_file(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("one\ntwo\nthree\n")
    events = run_scenario(
        base_scenario(tmp_path, {"call": "session/prompt", "text": "read f.txt 2 1"})
    )
    (read,) = requests(events, "fs/read_text_file")
    assert read["params"]["path"] == str(tmp_path / "f.txt")
    assert (read["params"]["line"], read["params"]["limit"]) == (2, 1)
    assert read["answer"] == {"content": "two"}
    assert "two" in messages(events)
    (call,) = updates(events, "tool_call")
    assert call["kind"] == "read"
    assert call["locations"] == [{"path": str(tmp_path / "f.txt"), "line": 2}]


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
    outputs = requests(events, "terminal/output")
    assert outputs[0]["answer"]["output"] == "hi\n"
    assert outputs[0]["answer"]["exitStatus"] == {"exitCode": 0, "signal": None}
    assert len(requests(events, "terminal/kill")) == 1
    assert len(requests(events, "terminal/release")) == 2
    calls = updates(events, "tool_call")
    assert [c["kind"] for c in calls] == ["execute", "execute"]
    assert any(
        c.get("content") == [{"type": "terminal", "terminalId": creates[0]["answer"]["terminalId"]}]
        for c in updates(events, "tool_call_update")
    )


@pytest.mark.parametrize("how", ["cancelAfterMs", "cancelRequestAfterMs"])
def test_slow_turn_cancelled(tmp_path: Path, how: str) -> None:
    events = run_scenario(
        base_scenario(
            tmp_path,
            {"call": "session/prompt", "text": "echo before\nslow\necho after", how: 300},
            {"call": "session/prompt", "text": "echo again"},
        )
    )
    assert response(events, 2)["result"] == {"stopReason": "cancelled"}
    assert response(events, 3)["result"] == {"stopReason": "end_turn"}
    assert messages(events) == ["before", "again"]


def test_session_list_load_resume_close_delete(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    events = run_scenario(
        base_scenario(
            tmp_path,
            {"call": "session/new"},
            {"call": "session/new", "cwd": str(other)},
            {"call": "session/new"},
            {"call": "session/prompt", "text": "echo remembered\ntitle Third"},
            {"call": "session/list", "cwd": str(tmp_path)},  # 6
            {"call": "session/list", "cwd": str(tmp_path), "cursor": "2"},  # 7
            {"call": "session/load", "sessionId": "$last"},  # 8
            {"call": "session/resume", "sessionId": "$last"},  # 9
            {"call": "session/set_mode", "modeId": "code"},  # 10
            {"call": "session/set_config_option", "configId": "model", "value": "smart"},  # 11
            {"call": "session/close"},  # 12
            {"call": "session/prompt", "text": "echo closed"},  # 13
            {"call": "session/delete", "sessionId": "$last"},  # 14
            {"call": "session/list", "cwd": str(tmp_path)},  # 15
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

    assert response(events, 10)["result"] == {}
    options = response(events, 11)["result"]["configOptions"]
    assert options[0]["currentValue"] == "smart"
    assert response(events, 12)["result"] == {}
    assert response(events, 13)["error"]["code"] == -32002
    assert response(events, 14)["result"] == {}
    assert [s["sessionId"] for s in response(events, 15)["result"]["sessions"]] == [ids[0], ids[1]]


def test_extensions_and_errors(tmp_path: Path) -> None:
    events = run_scenario(
        base_scenario(
            tmp_path,
            {"call": "ext", "method": "_acpwire/echo", "params": {"x": 1}},  # 2
            {"call": "ext_notify", "method": "_acpwire/hello", "params": {}},  # 3 (no event)
            {"call": "raw", "method": "no/such_method", "params": {}},  # 4
            {"call": "session/prompt", "text": "ext\nmeta\nrefuse\necho unreachable"},  # 5
            {"call": "session/prompt", "text": "fail"},  # 6
            {"call": "authenticate", "methodId": "token"},  # 7
            {"call": "logout"},  # 8
        )
    )
    assert response(events, 2)["result"] == {"x": 1}
    assert response(events, 4)["error"]["code"] == -32601
    assert response(events, 5)["result"] == {"stopReason": "refusal"}
    assert response(events, 6)["error"]["code"] == -32603
    assert response(events, 7)["result"] == {}
    assert response(events, 8)["result"] == {}
    (ping,) = requests(events, "_acpwire/ping")
    assert ping["params"] == {"n": 1}
    texts = messages(events)
    assert 'ext: {"n":1}' in texts
    assert "unreachable" not in texts
    note = [e for e in events if e["event"] == "notification" and e["method"] == "_acpwire/note"]
    assert note == [{"event": "notification", "method": "_acpwire/note", "params": {"n": 2}}]
    (meta,) = [u for u in updates(events, "agent_message_chunk") if u["content"]["text"] == "meta"]
    assert meta["_meta"] == {"acpwire/test": {"nested": [1, 2]}}


def test_before_initialize_and_version_negotiation(tmp_path: Path) -> None:
    events = run_scenario(
        {
            "clientCapabilities": "empty",
            "cwd": str(tmp_path),
            "steps": [
                {"call": "session/new"},
                {"call": "initialize", "protocolVersion": 2},
                {"call": "session/new"},
                {"call": "session/prompt", "text": "elicit\nmode code\nusage"},
            ],
        }
    )
    assert response(events, 0)["error"]["code"] == -32600
    assert response(events, 1)["result"]["protocolVersion"] == 1
    assert response(events, 3)["result"] == {"stopReason": "end_turn"}
    # No elicitation capability advertised: the agent must not ask.
    assert requests(events, "elicitation/create") == []
    assert updates(events, "current_mode_update") == [
        {"sessionUpdate": "current_mode_update", "currentModeId": "code"}
    ]
    (usage,) = updates(events, "usage_update")
    assert (usage["used"], usage["size"], usage["cost"]) == (
        100,
        1000,
        {"amount": 0.01, "currency": "USD"},
    )


def test_elicitation_accepts(tmp_path: Path) -> None:
    events = run_scenario(base_scenario(tmp_path, {"call": "session/prompt", "text": "elicit"}))
    (elicit,) = requests(events, "elicitation/create")
    assert elicit["params"]["mode"] == "form"
    assert set(elicit["params"]["requestedSchema"]["properties"]) == {"name", "age"}
    assert 'elicit: accept {"name":"acp","age":3}' in messages(events)


def test_client_fails_when_agent_dies() -> None:
    cmd = [*sdk_install.ts_client_command(), "--agent", "false", "--scenario", "-"]
    proc = subprocess.run(
        cmd,
        input=json.dumps({"steps": [{"call": "initialize"}]}),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode != 0
    assert "ts_client:" in proc.stderr
    assert '"done"' not in proc.stdout


def test_terminal_output_truncated_from_the_start(tmp_path: Path) -> None:
    # The agent asks for outputByteLimit 65536; `seq 1 20000` prints 108894 bytes.
    events = run_scenario(
        base_scenario(tmp_path, {"call": "session/prompt", "text": "run seq 1 20000"})
    )
    (output,) = requests(events, "terminal/output")
    answer = output["answer"]
    assert answer["truncated"] is True
    assert len(answer["output"].encode()) == 65536
    assert answer["output"].endswith("\n19999\n20000\n")
    assert any(t.startswith("exit: 0 output: ") and t.endswith("20000") for t in messages(events))
