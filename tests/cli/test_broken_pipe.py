"""``acp ... | head`` stops quietly, as other Unix tools do: no traceback, status 141.

Real pipes: either the reader is gone before acp writes anything, or it reads one
line and then closes its end (what ``head -1`` does).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire.cli.main import EXIT_STDOUT_CLOSED

pytestmark = pytest.mark.slow  # acp commands run as processes

ACP = [sys.executable, "-m", "acpwire.cli.main"]

COMMANDS = {
    "check-list": ["check", "--list"],
    "chat-json": ["chat", "--json", "--prompt", "stream 300"],
    "chat-rich": ["chat", "--prompt", "stream 300"],
}


def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {**os.environ, "HOME": str(home), "ACPWIRE_DATA_DIR": str(tmp_path / "data")}


def _assert_quiet(stderr: str) -> None:
    assert "Traceback" not in stderr
    assert "Broken pipe" not in stderr
    assert "Exception ignored" not in stderr
    assert "unknown request id" not in stderr


@pytest.mark.parametrize("command", COMMANDS.values(), ids=COMMANDS.keys())
def test_a_command_whose_reader_is_already_gone_exits_quietly(
    tmp_path: Path, command: list[str]
) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [*ACP, *command],
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            env=_env(tmp_path),
            timeout=TIMEOUT,
        )
    finally:
        os.close(write_end)
    _assert_quiet(done.stderr)
    assert done.returncode == EXIT_STDOUT_CLOSED, done.stderr


def test_chat_json_whose_reader_takes_one_line_and_leaves_stops_the_turn_quietly(
    tmp_path: Path,
) -> None:
    # About 400 kB of updates: far more than a pipe buffers, so writing must fail.
    process = subprocess.Popen(
        [*ACP, "chat", "--json", "--prompt", "stream 2000"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=_env(tmp_path),
    )
    assert process.stdout is not None and process.stderr is not None
    try:
        assert process.stdout.readline().startswith('{"sessionId"')
        process.stdout.close()  # like `head -1`
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    _assert_quiet(stderr)
    assert process.returncode == EXIT_STDOUT_CLOSED, stderr
