"""An agent's stdio works whatever its stdin and stdout are: pipes, files, /dev/null."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from waiting import TIMEOUT

AGENT = Path(__file__).resolve().parents[1] / "engine" / "agent_program.py"
INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'


def test_an_agent_reading_a_file_and_writing_a_file_answers_and_exits(tmp_path: Path) -> None:
    requests = tmp_path / "in.jsonl"
    requests.write_bytes(INIT)
    replies = tmp_path / "out.jsonl"
    with requests.open("rb") as stdin, replies.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, str(AGENT)], stdin=stdin, stdout=stdout, timeout=TIMEOUT
        )
    assert done.returncode == 0
    (line,) = replies.read_bytes().splitlines()
    assert json.loads(line)["result"]["protocolVersion"] == 1


def test_an_agent_with_stdin_from_dev_null_exits_at_once_instead_of_hanging() -> None:
    done = subprocess.run(
        [sys.executable, str(AGENT)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0
