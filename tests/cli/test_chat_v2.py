"""``acp chat --protocol 2`` (or ``ACP_PROTOCOL=2``): offers the ACP v2 draft and falls
back to v1 when the agent answers 1. Real subprocesses: the TypeScript SDK's v2 agent
(skipped without node or the SDK) and the toolkit test agent, which speaks v1 only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire.cli.chat.session import EXIT_OK, EXIT_USAGE

pytestmark = pytest.mark.slow  # acp chat runs as a process

TESTS = Path(__file__).resolve().parents[1]
TOOLKIT_AGENT = [sys.executable, str(TESTS / "client" / "toolkit_agent.py")]
ACP = [sys.executable, "-m", "acpwire.cli.main"]


def ts_v2_agent() -> list[str]:
    sys.path.insert(0, str(TESTS / "interop"))
    try:
        import sdk_install  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    reason = sdk_install.ts_skip_reason()
    if reason:
        pytest.skip(reason)
    return [sdk_install.node_executable() or "node", str(sdk_install.PEERS_DIR / "ts_v2_agent.mjs")]


def chat(
    tmp_path: Path, *args: str, agent: list[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [*ACP, "chat", "--cwd", str(tmp_path), *args, "--", *agent]
    full_env = {
        **os.environ,
        "ACPWIRE_DATA_DIR": str(tmp_path / ".data"),
        "COLUMNS": "10000",
        **(env or {}),
    }
    if env is None:
        full_env.pop("ACP_PROTOCOL", None)  # the switch under test is the command line's
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=full_env,
        stdin=subprocess.DEVNULL,
    )


def test_chat_offering_v2_runs_a_turn_with_a_v2_agent(tmp_path: Path) -> None:
    out = chat(tmp_path, "--protocol", "2", "--prompt", "echo hello v2\ntool", agent=ts_v2_agent())
    assert out.returncode == EXIT_OK, out.stderr
    lines = out.stdout.splitlines()
    assert "hello v2" in lines
    assert lines[-1] == "stop: end_turn"


def test_the_environment_switch_offers_v2_and_json_lines_are_the_v2_updates(tmp_path: Path) -> None:
    out = chat(
        tmp_path, "--prompt", "echo hi", "--json", agent=ts_v2_agent(), env={"ACP_PROTOCOL": "2"}
    )
    assert out.returncode == EXIT_OK, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = [e["update"]["sessionUpdate"] for e in events if "update" in e]
    assert kinds[0] == "user_message" and "state_update" in kinds
    chunk = next(
        e["update"]
        for e in events
        if e.get("update", {}).get("sessionUpdate") == "agent_message_chunk"
    )
    assert chunk["messageId"] and chunk["content"]["text"] == "hi"


def test_chat_offering_v2_to_a_v1_agent_falls_back_to_v1(tmp_path: Path) -> None:
    out = chat(tmp_path, "--protocol", "2", "--prompt", "echo still here", agent=TOOLKIT_AGENT)
    assert out.returncode == EXIT_OK, out.stderr
    assert "still here" in out.stdout.splitlines()
    assert out.stdout.splitlines()[-1] == "stop: end_turn"


def test_a_protocol_switch_that_is_not_1_or_2_is_a_usage_error(tmp_path: Path) -> None:
    out = chat(tmp_path, "--prompt", "x", agent=TOOLKIT_AGENT, env={"ACP_PROTOCOL": "3"})
    assert out.returncode == EXIT_USAGE
    assert "ACP_PROTOCOL" in out.stderr


DEMO_AGENT = [sys.executable, "-m", "acpwire.demo", "--store", "memory:"]


def test_the_demo_agent_answers_v2_when_offered_and_its_tools_work_over_v2(tmp_path: Path) -> None:
    out = chat(
        tmp_path,
        "--protocol",
        "2",
        "--policy",
        "allow",
        "--json",
        "--prompt",
        "write notes.txt hello from v2",
        agent=DEMO_AGENT,
    )
    assert out.returncode == EXIT_OK, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    updates = [e["update"] for e in events if "update" in e]
    kinds = [u["sessionUpdate"] for u in updates]
    assert "user_message" in kinds
    assert kinds.index("user_message") < kinds.index("state_update")
    states = [u["state"] for u in updates if u["sessionUpdate"] == "state_update"]
    assert states[0] == "running" and states[-1] == "idle"
    assert "requires_action" in states  # the edit asked for permission
    assert "tool_call" not in kinds and "tool_call_update" in kinds
    diff = next(
        c
        for u in updates
        if u["sessionUpdate"] == "tool_call_update"
        for c in u.get("content") or []
        if c["type"] == "diff"
    )
    assert diff["changes"] == [{"operation": "add", "path": str(tmp_path / "notes.txt")}]
    assert "+hello from v2" in diff["patch"]["text"]
    assert (tmp_path / "notes.txt").read_text() == "hello from v2\n"
    assert events[-1] == {"stopReason": "end_turn"}


def test_the_demo_agent_still_answers_v1_to_a_v1_client(tmp_path: Path) -> None:
    out = chat(tmp_path, "--json", "--prompt", "think hmm", agent=DEMO_AGENT)
    assert out.returncode == EXIT_OK, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = {e["update"]["sessionUpdate"] for e in events if "update" in e}
    assert "agent_thought_chunk" in kinds and "state_update" not in kinds
