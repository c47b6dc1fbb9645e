"""``acp chat --prompt``: one turn as a real subprocess, output and exit status asserted.

Agents: the built-in demo agent (the default), the toolkit test agent and the
TypeScript SDK peer agent (skipped when node or the SDK are unavailable).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire.cli.chat.session import (
    EXIT_AGENT_ERROR,
    EXIT_AUTH_REQUIRED,
    EXIT_CANCELLED,
    EXIT_OK,
    EXIT_REFUSAL,
    EXIT_START_FAILED,
    EXIT_VERSION_MISMATCH,
    demo_agent_available,
)
from acpwire.cli.main import main

pytestmark = pytest.mark.slow  # acp chat runs as a process

TESTS = Path(__file__).resolve().parents[1]
TOOLKIT_AGENT = [sys.executable, str(TESTS / "client" / "toolkit_agent.py")]
AUTH_AGENT = [sys.executable, str(TESTS / "cli" / "auth_agent.py")]
ACP = [sys.executable, "-m", "acpwire.cli.main"]


def ts_agent() -> list[str]:
    sys.path.insert(0, str(TESTS / "interop"))
    try:
        import sdk_install  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    reason = sdk_install.ts_skip_reason()
    if reason:
        pytest.skip(reason)
    command: list[str] = sdk_install.ts_agent_command()
    return command


def chat(
    tmp_path: Path, *args: str, agent: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    argv = [*ACP, "chat", "--cwd", str(tmp_path), *args]
    if agent is not None:
        argv += ["--", *agent]
    # Read lines whole: a width no line reaches, so a long tmp_path is never wrapped.
    env = {**os.environ, "ACPWIRE_DATA_DIR": str(tmp_path / ".data"), "COLUMNS": "10000"}
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=TIMEOUT, env=env, stdin=subprocess.DEVNULL
    )


def test_version_is_printed() -> None:
    out = subprocess.run([*ACP, "--version"], capture_output=True, text=True, timeout=TIMEOUT)
    assert out.returncode == 0
    assert out.stdout.startswith("acp (acpwire) ")


@pytest.mark.skipif(not demo_agent_available(), reason="the demo agent is not installed yet")
def test_without_an_agent_command_the_demo_agent_answers(tmp_path: Path) -> None:
    out = chat(tmp_path, "--prompt", "help")
    assert out.returncode == EXIT_OK, out.stderr
    assert "> help" in out.stdout
    assert "help" in out.stdout and "List the commands" in out.stdout
    assert "acpwire demo agent" in out.stdout
    assert "stop: end_turn" in out.stdout


def test_output_that_is_not_a_terminal_is_the_agents_text_unpadded_and_unwrapped(
    tmp_path: Path,
) -> None:
    long_words = " ".join(f"word{i}" for i in range(60))  # far past 80 columns
    out = chat(tmp_path, "--prompt", f"echo hello **bold** {long_words}", agent=TOOLKIT_AGENT)
    assert out.returncode == EXIT_OK, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"> echo hello **bold** {long_words}"
    assert f"hello **bold** {long_words}" in lines  # the Markdown as the agent wrote it
    assert "toolkit-test-agent 1 | mode: Ask (ask) | model: fast" in lines
    assert lines[-1] == "stop: end_turn"
    assert all(line == line.rstrip() for line in lines)


def test_on_a_terminal_the_reply_is_drawn_as_markdown(tmp_path: Path) -> None:
    import pty

    master, slave = pty.openpty()
    argv = [*ACP, "chat", "--cwd", str(tmp_path), "--prompt", "echo hello **bold** world"]
    env = {**os.environ, "ACPWIRE_DATA_DIR": str(tmp_path / ".data"), "COLUMNS": "100"}
    process = subprocess.Popen(
        [*argv, "--", *TOOLKIT_AGENT], stdout=slave, stderr=subprocess.PIPE, env=env
    )
    os.close(slave)
    output = b""
    try:
        while chunk := os.read(master, 65536):
            output += chunk
    except OSError:  # the other end closed
        pass
    finally:
        os.close(master)
        assert process.wait(TIMEOUT) == EXIT_OK
        assert process.stderr is not None
        process.stderr.close()
    text = re.sub(r"\x1b\[[0-9;]*m", "", output.decode()).replace("\r\n", "\n")
    lines = [line.rstrip() for line in text.splitlines()]
    assert lines[:2] == ["> echo hello **bold** world", "hello bold world"]


def test_json_prints_one_wire_update_per_line_then_the_stop_reason(tmp_path: Path) -> None:
    out = chat(tmp_path, "--json", "--prompt", "plan", agent=TOOLKIT_AGENT)
    assert out.returncode == EXIT_OK, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = [r["update"]["sessionUpdate"] for r in rows[:-1]]
    assert kinds == ["plan", "plan", "agent_message_chunk"]
    assert all(r["sessionId"].startswith("sess_") for r in rows[:-1])
    assert rows[1]["update"]["entries"][0] == {
        "content": "Look",
        "priority": "high",
        "status": "completed",
    }
    assert rows[-1] == {"stopReason": "end_turn"}


def test_policy_allow_writes_a_file_through_a_permission(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    out = chat(
        tmp_path, "--policy", "allow", "--prompt", f"write {target} hello", agent=TOOLKIT_AGENT
    )
    assert out.returncode == EXIT_OK, out.stderr
    assert target.read_text() == "hello"
    assert f"[edit] Write {target}  completed" in out.stdout
    assert f"new file {target}" in out.stdout
    assert "+hello" in out.stdout


def test_permission_requests_are_denied_by_default(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    out = chat(tmp_path, "--prompt", f"write {target} hello", agent=TOOLKIT_AGENT)
    assert out.returncode == EXIT_OK, out.stderr
    assert not target.exists()
    assert f"[edit] Write {target}  failed" in out.stdout
    assert "write refused" in out.stdout
    assert f"acp chat: denied permission: Write {target} (--policy deny)" in out.stderr


def in_process(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, *args: str, agent: list[str]
) -> tuple[int, str, str]:
    """``main()`` called directly (same code path, no interpreter start-up)."""
    code = main(["chat", "--cwd", str(tmp_path), *args, "--", *agent])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_policy_ask_without_a_terminal_denies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out.txt"
    code, _, err = in_process(
        capsys, tmp_path, "--policy", "ask", "--prompt", f"write {target} x", agent=TOOLKIT_AGENT
    )
    assert code == EXIT_OK
    assert not target.exists()
    assert "permission requests are denied" in err


def test_a_missing_agent_command_is_reported(tmp_path: Path) -> None:
    out = chat(tmp_path, "--prompt", "hi", agent=["no-such-agent-command-xyz"])
    assert out.returncode == EXIT_START_FAILED
    assert "agent command not found: no-such-agent-command-xyz" in out.stderr
    assert out.stdout == ""


def test_an_agent_exiting_during_initialize_is_reported_with_its_stderr(tmp_path: Path) -> None:
    out = chat(tmp_path, "--prompt", "hi", agent=[*TOOLKIT_AGENT, "--crash-on-initialize"])
    assert out.returncode == EXIT_START_FAILED
    assert "exited with status 3 during initialize" in out.stderr
    assert "simulated crash during initialize" in out.stderr


def test_a_protocol_version_mismatch_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = in_process(
        capsys, tmp_path, "--prompt", "hi", agent=[*TOOLKIT_AGENT, "--protocol-version", "2"]
    )
    assert code == EXIT_VERSION_MISMATCH
    assert "protocol version mismatch" in err
    assert "version 2" in err


def test_an_agent_needing_authentication_lists_its_methods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = in_process(capsys, tmp_path, "--prompt", "hi", agent=AUTH_AGENT)
    assert code == EXIT_AUTH_REQUIRED
    assert "the agent needs authentication: log in first" in err
    assert "token: API token - uses $TOKEN" in err
    assert "login: Log in (terminal login: run `" in err
    assert "auth_agent.py --login`" in err


def test_ctrl_c_cancels_the_turn_and_exits_with_the_cancelled_code(tmp_path: Path) -> None:
    argv = [
        *ACP,
        "chat",
        "--cwd",
        str(tmp_path),
        "--json",
        "--prompt",
        "slow",
        "--",
        *TOOLKIT_AGENT,
    ]
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    ) as proc:
        assert proc.stdout is not None
        first = json.loads(proc.stdout.readline())  # the turn is running: "working" arrived
        assert first["update"]["content"]["text"] == "working"
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == EXIT_CANCELLED, err
    assert json.loads(rest.splitlines()[-1]) == {"stopReason": "cancelled"}


# ---------------------------------------------------------------------- TypeScript SDK agent


def test_ts_agent_turn_with_thoughts_plan_tools_usage_mode_and_title(tmp_path: Path) -> None:
    target = tmp_path / "ts.txt"
    script = "\n".join(
        [
            "echo hi from ts",
            "think pondering",
            "plan",
            f"write {target} from ts",
            "run echo ran",
            "usage",
            "title My Title",
            "mode code",
        ]
    )
    out = chat(tmp_path, "--policy", "allow", "--prompt", script, agent=ts_agent())
    assert out.returncode == EXIT_OK, out.stderr
    assert target.read_text() == "from ts"
    text = out.stdout
    assert "hi from ts" in text
    assert "thinking: pondering" in text
    assert "[x] Run the tests  (low, completed)" in text
    assert "[~] Change the code  (medium, in_progress)" in text
    assert f"[edit] Write {target}  completed" in text
    assert "+from ts" in text
    assert "[execute] Run: echo ran  completed" in text
    assert "(exit 0)" in text and "ran" in text
    assert "title: My Title" in text
    assert "mode: Code (code)" in text
    assert "usage: 100/1000 (10%) 0.01 USD" in text


def test_ts_agent_json_and_deny(tmp_path: Path) -> None:
    target = tmp_path / "ts.txt"
    out = chat(tmp_path, "--json", "--prompt", f"write {target} nope", agent=ts_agent())
    assert out.returncode == EXIT_OK, out.stderr
    assert not target.exists()
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    updates = [r["update"] for r in rows[:-1]]
    assert updates[0]["sessionUpdate"] == "tool_call" and updates[0]["kind"] == "edit"
    assert updates[0]["content"][0]["type"] == "diff"
    assert any(u.get("status") == "failed" for u in updates)
    assert rows[-1] == {"stopReason": "end_turn"}


def test_ts_agent_refusal_and_errors_have_their_own_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = ts_agent()
    code, out, _ = in_process(capsys, tmp_path, "--prompt", "refuse", agent=agent)
    assert code == EXIT_REFUSAL
    assert "stop: refusal" in out
    code, _, err = in_process(capsys, tmp_path, "--prompt", "fail", agent=agent)
    assert code == EXIT_AGENT_ERROR
    assert "(code -32603)" in err
