"""Spawning an agent: stderr captured, graceful stop, no orphans."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from cli.processes import alive
from waiting import TIMEOUT, wait_until

from acpwire.transports import AgentNotFoundError, spawn
from acpwire.transports import subprocess as subprocess_transport


async def test_a_missing_agent_command_is_a_clear_error() -> None:
    with pytest.raises(AgentNotFoundError, match="no-such-agent-xyz"):
        await spawn("no-such-agent-xyz")


def echo_script(path: Path) -> int:
    """Write an executable agent that prints one line, and keep it open for writing: the
    descriptor returned makes every ``exec`` of it fail with ETXTBSY until closed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o755)
    os.write(fd, b"#!/bin/sh\necho '{\"started\": true}'\n")
    return fd


async def test_an_agent_file_still_open_for_writing_is_started_once_it_is_closed(
    tmp_path: Path,
) -> None:
    # A script being written (or inherited, still open, by a child another thread forked)
    # is "text file busy" for a moment: spawn tries again rather than fail.
    fd = echo_script(tmp_path / "agent.sh")
    asyncio.get_running_loop().call_later(0.2, os.close, fd)
    t = await spawn(str(tmp_path / "agent.sh"))
    try:
        assert await asyncio.wait_for(t.receive(), TIMEOUT) == b'{"started": true}'
    finally:
        await t.close()


async def test_an_agent_that_cannot_be_executed_is_a_clear_error_naming_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(subprocess_transport, "START_RETRIES", (0.01, 0.01))
    fd = echo_script(tmp_path / "busy.sh")
    try:
        with pytest.raises(AgentNotFoundError, match=r"busy\.sh.*Text file busy \(ETXTBSY\)"):
            await spawn(str(tmp_path / "busy.sh"))
    finally:
        os.close(fd)
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\x7fELF not really")
    garbage.chmod(0o755)
    with pytest.raises(AgentNotFoundError, match=r"garbage.*Exec format error \(ENOEXEC\)"):
        await spawn(str(garbage))


async def test_a_relative_agent_path_is_found_from_here_not_from_the_agents_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    agent = here / "agent.sh"
    agent.write_text('#!/bin/sh\necho "{\\"cwd\\": \\"$(pwd)\\"}"\n')
    agent.chmod(0o755)
    monkeypatch.chdir(here)
    t = await spawn(f".{os.sep}agent.sh", cwd=elsewhere)
    try:
        line = await asyncio.wait_for(t.receive(), TIMEOUT)
    finally:
        await t.close()
    assert line == f'{{"cwd": "{elsewhere}"}}'.encode()


async def test_stderr_is_captured_and_handed_to_the_callback() -> None:
    lines: list[str] = []
    got = asyncio.Event()

    def on_stderr(line: str) -> None:
        lines.append(line)
        got.set()

    t = await spawn(
        sys.executable,
        [
            "-c",
            "import sys; sys.stderr.write('hello log\\n'); sys.stderr.flush(); sys.stdin.read()",
        ],
        on_stderr=on_stderr,
    )
    await asyncio.wait_for(got.wait(), TIMEOUT)
    assert lines == ["hello log"]
    await t.close()
    assert "hello log" in t.stderr_tail()


async def test_closing_stops_an_agent_that_ignores_stdin_and_its_children() -> None:
    """The agent ignores EOF and SIGTERM; close() still ends it and the child it started."""
    script = (
        "import signal, subprocess, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    t = await spawn(sys.executable, ["-c", script], grace_period=0.2)
    line = await asyncio.wait_for(t.receive(), TIMEOUT)
    assert isinstance(line, bytes)
    child = int(line)
    assert alive(child)
    await asyncio.wait_for(t.close(), TIMEOUT)
    assert t.returncode is not None
    await wait_until(lambda: not alive(child), "the agent's child is gone")


async def test_a_well_behaved_agent_exits_on_eof_without_signals() -> None:
    t = await spawn(sys.executable, ["-c", "import sys; sys.stdin.read()"])
    await asyncio.wait_for(t.close(), TIMEOUT)
    assert t.returncode == 0


async def test_the_agent_exiting_ends_the_input_although_a_grandchild_holds_its_stdout() -> None:
    """The end of input comes from the exit itself, not only from the pipe's end of file."""
    script = (
        "import os, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],"
        " stdin=subprocess.DEVNULL)\n"
        "print('{\"grandchild\": %d}' % child.pid, flush=True)\n"
        "os._exit(7)\n"
    )
    t = await spawn(sys.executable, ["-c", script], grace_period=0.2)
    first = await asyncio.wait_for(t.receive(), TIMEOUT)
    assert isinstance(first, bytes)
    grandchild = int(first.split(b":")[1].strip(b" }"))
    assert await asyncio.wait_for(t.receive(), TIMEOUT) is None
    assert t.returncode == 7
    assert alive(grandchild)  # it still holds the pipe: the end came from the exit
    await asyncio.wait_for(t.close(), TIMEOUT)
    await wait_until(lambda: not alive(grandchild), "the grandchild is gone")


async def test_closing_does_not_wait_for_a_pipe_held_by_a_child_outside_the_group() -> None:
    script = (
        "import os, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],"
        " stdin=subprocess.DEVNULL, start_new_session=True)\n"
        "print(child.pid, flush=True)\n"
        "os._exit(0)\n"
    )
    t = await spawn(sys.executable, ["-c", script], grace_period=0.2)
    line = await asyncio.wait_for(t.receive(), TIMEOUT)
    assert isinstance(line, bytes)
    escaped = int(line)
    try:
        await asyncio.wait_for(t.close(), TIMEOUT)
        assert t.returncode == 0
    finally:
        os.kill(escaped, 9)


async def test_lines_that_are_not_json_go_to_the_stray_output_callback() -> None:
    stray: list[str] = []
    script = (
        "print('Please visit https://example.com/login')\n"
        'print(\'{"jsonrpc": "2.0", "method": "x"}\')\n'
        "print('Enter the authorization code:', flush=True)\n"
        "print('  [1]', flush=True)\n"
    )
    t = await spawn(sys.executable, ["-c", script], on_stray_output=stray.append)
    messages = []
    while (message := await asyncio.wait_for(t.receive(), TIMEOUT)) is not None:
        messages.append(message)
    await t.close()
    assert messages == [b'{"jsonrpc": "2.0", "method": "x"}', b"  [1]"]
    assert stray == ["Please visit https://example.com/login", "Enter the authorization code:"]
