"""``acp chat --prompt`` against misbehaving and real-world-shaped agents (hostile_agent.py).

Each test runs the real ``acp chat`` in a subprocess. Questions need a terminal, so
those tests give it a pseudo-terminal as stdin and type into it; Ctrl-C is a real
SIGINT to the process. Every wait is bounded; none asserts elapsed time.
"""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire.cli.chat.session import (
    EXIT_AGENT_ERROR,
    EXIT_AUTH_REQUIRED,
    EXIT_OK,
    EXIT_VERSION_MISMATCH,
)

from .processes import alive, in_session

pytestmark = pytest.mark.slow  # acp chat runs as a process on a pseudo-terminal

HOSTILE = [sys.executable, str(Path(__file__).with_name("hostile_agent.py"))]
ACP = [sys.executable, "-m", "acpwire.cli.main"]
EXIT_INTERRUPTED = 130


def chat_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_API_KEY", "OPENAI_API_KEY")}
    return {**env, "ACPWIRE_DATA_DIR": str(tmp_path / ".data"), **extra}


def chat(tmp_path: Path, mode: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``acp chat`` with stdin and stdout not terminals."""
    argv = [*ACP, "chat", "--cwd", str(tmp_path), "--prompt", "hi", *args, "--", *HOSTILE, mode]
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=chat_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )


class Terminal:
    """``acp chat`` with a pseudo-terminal as stdin; its stderr is read as it comes."""

    def __init__(self, tmp_path: Path, mode: str, *args: str, **env: str) -> None:
        self.pid_file = tmp_path / "agent.pid"
        master, slave = pty.openpty()
        self.master = master
        argv = [*ACP, "chat", "--cwd", str(tmp_path), *args, "--", *HOSTILE, mode]
        self.process = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=chat_env(tmp_path, HOSTILE_PID_FILE=str(self.pid_file), **env),
        )
        os.close(slave)
        self.err = ""
        self.out = b""
        self._changed = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read_err, daemon=True),
            threading.Thread(target=self._read_out, daemon=True),
            threading.Thread(target=self._drain_terminal, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_err(self) -> None:
        assert self.process.stderr is not None
        for raw in iter(lambda: self.process.stderr.read1(4096), b""):  # type: ignore[union-attr]
            with self._changed:
                self.err += raw.decode("utf-8", "replace")
                self._changed.notify_all()

    def _read_out(self) -> None:
        assert self.process.stdout is not None
        self.out = self.process.stdout.read()

    def _drain_terminal(self) -> None:
        # What the terminal echoes must be read, or typing would block once it fills up.
        try:
            while os.read(self.master, 4096):
                pass
        except OSError:
            pass

    def wait_for(self, text: str) -> None:
        with self._changed:
            ok = self._changed.wait_for(lambda: text in self.err, TIMEOUT)
        assert ok, f"never saw {text!r} on stderr:\n{self.err}"

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\r")

    def exit_code(self) -> int:
        code = self.process.wait(TIMEOUT)
        for reader in self._readers[:2]:
            reader.join(TIMEOUT)
        return code

    def agent_pids(self) -> list[int]:
        return [int(p) for p in self.pid_file.read_text().split()]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(TIMEOUT)
        for reader in self._readers[:2]:
            reader.join(TIMEOUT)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
        # The terminal's reader ends (EIO) now that chat is gone. Close its descriptor only
        # then: closed under a reader that reads again, the number could be another
        # thread's new pipe by the time it does, and its bytes would vanish here.
        self._readers[2].join(TIMEOUT)
        if not self._readers[2].is_alive():
            os.close(self.master)


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    made: list[Terminal] = []
    yield made
    for terminal in made:
        terminal.close()


# ---------------------------------------------------------------------- never hangs


def test_a_20_mb_message_chunk_is_printed_whole_and_the_turn_ends(tmp_path: Path) -> None:
    out = chat(tmp_path, "huge-chunk")
    assert out.returncode == EXIT_OK, out.stderr
    lines = out.stdout.splitlines()
    assert lines[1] == "x" * (20 * 1024 * 1024 - 1) + "!"
    assert lines[-1] == "stop: end_turn"


def test_a_41_mb_line_is_dropped_with_a_warning_and_the_turn_goes_on(tmp_path: Path) -> None:
    out = chat(tmp_path, "oversize-line")
    assert out.returncode == EXIT_OK, out.stderr
    assert "warning: client: dropped an incoming message of " in out.stderr
    assert "(over the size limit)" in out.stderr
    assert "after the big line" in out.stdout.splitlines()
    assert out.stdout.splitlines()[-1] == "stop: end_turn"


def test_an_agent_that_exits_while_a_grandchild_holds_its_stdout_is_reported_dead(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "agent.pid"
    argv = [*ACP, "chat", "--cwd", str(tmp_path), "--prompt", "hi", "--", *HOSTILE, "orphan-exit"]
    out = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=chat_env(tmp_path, HOSTILE_PID_FILE=str(pid_file)),
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == EXIT_AGENT_ERROR
    assert "acp chat: the agent died: it exited with status 7" in out.stderr
    agent, grandchild = (int(p) for p in pid_file.read_text().split())
    assert not alive(agent) and not alive(grandchild)


def test_ctrl_c_while_a_permission_question_waits_exits_and_leaves_nothing_running(
    tmp_path: Path, terminals: list[Terminal]
) -> None:
    """The agent ignores SIGINT and never ends the turn: acp chat stops it and exits."""
    chat = Terminal(tmp_path, "permission", "--policy", "ask", "--prompt", "edit it")
    terminals.append(chat)
    chat.wait_for("choose (number")
    assert "Edit notes.txt" in chat.err
    (agent,) = chat.agent_pids()
    assert alive(agent)
    chat.process.send_signal(signal.SIGINT)
    assert chat.exit_code() == EXIT_INTERRUPTED
    assert "cancelling the turn" in chat.err
    assert "did not end the turn" in chat.err
    assert not alive(agent)
    assert in_session(agent) == []


# ---------------------------------------------------------------------- authentication


def test_env_var_methods_are_shown_with_their_variables(tmp_path: Path) -> None:
    out = chat(tmp_path, "env-var")
    assert out.returncode == EXIT_AUTH_REQUIRED
    assert (
        "codex-api-key: Use CODEX_API_KEY - Requires setting the `CODEX_API_KEY` environment "
        "variable. (set CODEX_API_KEY in the agent's environment)" in out.stderr
    )
    assert (
        "openai-api-key: Use OPENAI_API_KEY (set OPENAI_API_KEY in the agent's environment; "
        "get one at https://platform.openai.com/api-keys)" in out.stderr
    )
    assert "chatgpt: Login with ChatGPT (terminal login: run `CODEX_LOGIN=1 " in out.stderr
    assert "hostile_agent.py env-var --login`)" in out.stderr


def test_an_env_var_method_asks_for_the_key_unechoed_and_restarts_the_agent_with_it(
    tmp_path: Path, terminals: list[Terminal]
) -> None:
    chat = Terminal(tmp_path, "env-var", "--prompt", "hi")
    terminals.append(chat)
    chat.wait_for("authenticate with (number")
    assert "1) Use CODEX_API_KEY: set CODEX_API_KEY in the agent's environment" in chat.err
    chat.type("2")
    chat.wait_for("get credentials at https://platform.openai.com/api-keys")
    chat.wait_for("OpenAI key (OPENAI_API_KEY): ")
    chat.type("sk-test-123")
    assert chat.exit_code() == EXIT_OK, chat.err
    assert "starting the agent again with the variables set" in chat.err
    assert b"hello from the hostile agent" in chat.out
    assert "sk-test-123" not in chat.err


def test_ctrl_c_at_a_login_question_leaves_at_once(
    tmp_path: Path, terminals: list[Terminal]
) -> None:
    chat = Terminal(tmp_path, "env-var", "--prompt", "hi")
    terminals.append(chat)
    chat.wait_for("authenticate with (number")
    chat.process.send_signal(signal.SIGINT)
    assert chat.exit_code() == EXIT_INTERRUPTED
    assert "acp chat: interrupted" in chat.err


def test_authentication_asked_at_prompt_time_offers_the_same_choices_then_retries(
    tmp_path: Path, terminals: list[Terminal]
) -> None:
    """As claude-agent-acp does: session/new works, session/prompt answers -32000."""
    chat = Terminal(tmp_path, "auth-at-prompt", "--prompt", "hi")
    terminals.append(chat)
    chat.wait_for("authenticate with (number")
    assert "claude-ai-login: Claude Subscription (terminal login: run `" in chat.err
    assert "hostile_agent.py auth-at-prompt --cli auth login --claudeai`" in chat.err
    chat.type("2")  # the agent method
    assert chat.exit_code() == EXIT_OK, chat.err
    out = chat.out.decode()
    assert out.count("> hi") == 1
    assert "hello from the hostile agent" in out


def test_prompt_time_authentication_without_a_terminal_lists_the_methods(tmp_path: Path) -> None:
    out = chat(tmp_path, "auth-at-prompt")
    assert out.returncode == EXIT_AUTH_REQUIRED
    assert "the agent needs authentication: Authentication required" in out.stderr
    assert "token: API token - unlocks at once (the agent logs you in)" in out.stderr


def test_login_output_outside_the_protocol_is_shown_and_a_stuck_login_can_be_cancelled(
    tmp_path: Path, terminals: list[Terminal]
) -> None:
    """gemini-cli prints its login URL on stdout and waits: show it, show progress, Ctrl-C."""
    chat = Terminal(tmp_path, "noisy-auth", "--prompt", "hi")
    terminals.append(chat)
    chat.wait_for("authenticate with (number")
    chat.type("1")
    chat.wait_for("agent output (not ACP): Enter the authorization code:")
    assert "agent output (not ACP): https://accounts.example.com/o/oauth2/auth" in chat.err
    assert "(Ctrl-C cancels)" in chat.err
    chat.wait_for("still waiting for the agent to finish authenticating")
    chat.process.send_signal(signal.SIGINT)
    assert chat.exit_code() == EXIT_AUTH_REQUIRED
    assert "authentication cancelled" in chat.err
    assert "malformed" not in chat.err


# ---------------------------------------------------------------------- versions


def test_an_agent_answering_version_2_is_refused_with_a_clear_message(tmp_path: Path) -> None:
    out = chat(tmp_path, "v2")
    assert out.returncode == EXIT_VERSION_MISMATCH
    assert "protocol version mismatch: the agent (" in out.stderr
    assert "does not speak ACP v1" in out.stderr
    assert "agent answered protocol version 2 to a request for 1" in out.stderr
    assert "Traceback" not in out.stderr


def test_an_agent_speaking_v1_and_v2_is_negotiated_to_v1(tmp_path: Path) -> None:
    out = chat(tmp_path, "v2-polite")
    assert out.returncode == EXIT_OK, out.stderr
    assert "hello from the hostile agent" in out.stdout


# ---------------------------------------------------------------------- output


def test_whole_thoughts_sent_as_separate_chunks_are_printed_apart(tmp_path: Path) -> None:
    out = chat(tmp_path, "thoughts")
    assert out.returncode == EXIT_OK, out.stderr
    lines = out.stdout.splitlines()
    start = lines.index("thinking: **Planning**")
    assert lines[start : start + 8] == [
        "thinking: **Planning**",
        "",
        "          I will read the file.",
        "",
        "          **Reading**",
        "",
        "          Now the tests. Then the fix.",
        "",
    ]
    assert lines[start + 8] == "done"
