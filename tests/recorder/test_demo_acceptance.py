"""The recorder's acceptance on the demo (issue 22): ``acp record`` of the demo replayed
to ``acp chat`` gives the same output as the live demo; ``acp verify`` of that recording
against the demo passes, and against a demo changed in one place shows exactly that."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from acpwire.demo.agent import COMMANDS

pytestmark = pytest.mark.slow  # acp chat, acp record and the demo run as processes

ACP = [sys.executable, "-m", "acpwire.cli.main"]
DEMO = [*ACP, "demo-agent"]
CHANGED_DEMO = [sys.executable, str(Path(__file__).with_name("changed_demo.py"))]
NOTES = "alpha\nbeta\ngamma\n"
TIMEOUT = 120


def acp(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ACP, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "ACPWIRE_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "100"}


@pytest.mark.parametrize(
    "prompt", ["read notes.txt", "edit notes.txt beta BETA"], ids=["read", "edit"]
)
def test_the_recorded_demo_replayed_to_acp_chat_prints_what_the_live_demo_printed(
    tmp_path: Path, env: dict[str, str], prompt: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    cassette = tmp_path / "demo.jsonl"
    chat = ["chat", "--prompt", prompt, "--policy", "allow"]
    outputs = []
    files = []
    for agent in (
        [],  # the live demo, as acp chat runs it
        ["--", *ACP, "record", "-o", str(cassette), "--", *DEMO],
        ["--", *ACP, "replay", str(cassette), "--as-agent"],
    ):
        (ws / "notes.txt").write_text(NOTES)
        done = acp([*chat, *agent], ws, env)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
        files.append((ws / "notes.txt").read_text())
    live, recorded, replayed = outputs
    assert "notes.txt" in live
    assert recorded == live
    assert replayed == live
    assert files[0] == files[1] == files[2]


def test_verify_passes_against_the_demo_and_shows_the_one_change_of_a_changed_demo(
    tmp_path: Path, env: dict[str, str]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text(NOTES)
    cassette = tmp_path / "demo.jsonl"
    record = ["--", *ACP, "record", "-o", str(cassette), "--", *DEMO]
    done = acp(["chat", "--prompt", "read notes.txt", *record], ws, env)
    assert done.returncode == 0, done.stderr

    same = acp(["verify", str(cassette), "--", *DEMO], ws, env)
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout == "no differences: the agent said what it said in the recording\n"

    changed = acp(["verify", str(cassette), "--", *CHANGED_DEMO], ws, env)
    assert changed.returncode == 1, changed.stderr
    read = next(i for i, c in enumerate(COMMANDS) if c.name == "read")
    lines = changed.stdout.splitlines()
    assert lines[0] == "1 message(s) differ:"
    assert lines[1].startswith("changed  #")
    assert lines[1].endswith(" session/update available_commands_update")
    assert lines[2:] == [
        f"    params.update.availableCommands[{read}].description: "
        '"Read a file through the client (tool call: read)" -> '
        '"Load a file through the client (tool call: read)"'
    ]


def test_the_recorded_client_side_drives_the_demo_and_the_new_run_is_recorded(
    tmp_path: Path, env: dict[str, str]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text(NOTES)
    cassette, again = tmp_path / "demo.jsonl", tmp_path / "again.jsonl"
    record = ["--", *ACP, "record", "-o", str(cassette), "--", *DEMO]
    assert acp(["chat", "--prompt", "read notes.txt", *record], ws, env).returncode == 0
    done = acp(["replay", str(cassette), "--as-client", "-o", str(again), "--", *DEMO], ws, env)
    assert done.returncode == 0, done.stderr
    from acpwire.recorder import read_cassette

    first, second = read_cassette(cassette), read_cassette(again)
    methods = [[m["msg"].get("method") for m in c.messages] for c in (first, second)]
    assert methods[0] == methods[1]
    assert second.header["mode"] == "in-process" and second.header["side"] == "client"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["replay", "C", "--as-agent", "--", "agent"], "--as-agent serves the recording itself"),
        (["replay", "C", "--as-client"], "give the agent command after --"),
        (["verify", "C"], "give the agent command after --"),
        (["verify", "NOFILE", "--", "agent"], "cannot read"),
        (["verify", "NOTES", "--", "agent"], "not an ACP cassette"),
    ],
)
def test_usage_errors_say_what_is_wrong(
    tmp_path: Path, env: dict[str, str], args: list[str], says: str
) -> None:
    (tmp_path / "notes.txt").write_text(NOTES)
    names = {"C": "c.jsonl", "NOFILE": "missing.jsonl", "NOTES": "notes.txt"}
    done = acp([names.get(a, a) for a in args], tmp_path, env)
    assert done.returncode == 2
    assert says in done.stderr and "Traceback" not in done.stderr
