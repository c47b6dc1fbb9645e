"""The pytest plugin, run as a user runs it: a test project in a folder of its own, and
pytest in a subprocess. The first run records, later runs replay (no agent started),
``--acp-record`` records again; an agent test verifies against the cassette."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # pytest and the demo run as processes

CLIENT_TEST = """
import os
import sys

from acpwire.client.permissions import AllowAll
from acpwire.client.toolkit import ToolkitClient

AGENT = [sys.executable, "-m", "acpwire.demo", "--store", os.environ["DEMO_STORE"]]
if os.environ.get("BREAK_AGENT"):
    AGENT = ["/nonexistent/agent"]


async def test_the_demo_reads_a_file(acp_cassette, tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\\n")
    async with acp_cassette.agent(AGENT) as transport:
        client = ToolkitClient(permissions=AllowAll())
        client.connect(transport)
        await client.initialize()
        session = await client.new_session(WORKSPACE)
        await client.prompt(session.session_id, "read notes.txt")
        await client.close()
    assert "alpha" in session.messages[-1].text
"""

AGENT_TEST = """
import dataclasses
import os

import pytest

import acpwire.demo.agent as demo
from acpwire.demo import build_app
from acpwire.transports.memory import memory_pair


@pytest.mark.acp_cassette("cassettes/test_the_demo_reads_a_file.jsonl")
async def test_the_demo_still_answers_as_recorded(acp_cassette, monkeypatch):
    if os.environ.get("CHANGE_DEMO"):
        changed = [dataclasses.replace(c, description=c.description.replace("Read", "Load"))
                   for c in demo.COMMANDS]
        monkeypatch.setattr(demo, "COMMANDS", tuple(changed))
    app = build_app(os.environ["DEMO_STORE"] + ".verify")
    agent_end, client_end = memory_pair()
    served = app.connect(agent_end)
    try:
        await acp_cassette.verify(client_end)
    finally:
        await served.close()
        await app.aclose()
"""


def pytest_run(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "asyncio_mode=auto",
            *args,
        ],
        cwd=project,
        env={**os.environ, "DEMO_STORE": str(project / "demo.sqlite3"), **env},
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_a_client_test_records_once_then_replays_and_records_again_on_request(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\n")
    source = textwrap.dedent(CLIENT_TEST).replace("WORKSPACE", repr(str(workspace)))
    (project / "test_client.py").write_text(source)
    cassette = project / "cassettes" / "test_the_demo_reads_a_file.jsonl"

    first = pytest_run(project)
    assert first.returncode == 0, first.stdout + first.stderr
    assert cassette.exists()
    recorded = cassette.read_bytes()

    # Replayed: the agent command is broken, and nothing notices.
    second = pytest_run(project, BREAK_AGENT="1")
    assert second.returncode == 0, second.stdout + second.stderr
    assert cassette.read_bytes() == recorded

    # --acp-record starts the (broken) agent again.
    third = pytest_run(project, "--acp-record", BREAK_AGENT="1")
    assert third.returncode == 1
    assert "nonexistent" in third.stdout


def test_an_agent_test_verifies_against_the_cassette_and_lists_what_changed(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\n")
    source = textwrap.dedent(CLIENT_TEST).replace("WORKSPACE", repr(str(workspace)))
    (project / "test_client.py").write_text(source)
    assert pytest_run(project).returncode == 0
    (project / "test_agent.py").write_text(textwrap.dedent(AGENT_TEST))

    same = pytest_run(project, "test_agent.py")
    assert same.returncode == 0, same.stdout + same.stderr

    changed = pytest_run(project, "test_agent.py", CHANGE_DEMO="1")
    assert changed.returncode == 1
    assert "the agent departed from" in changed.stdout
    assert '-> "Load a file through the client (tool call: read)"' in changed.stdout


def test_a_verify_without_cassette_is_skipped_with_how_to_record_one(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_agent.py").write_text(textwrap.dedent(AGENT_TEST))
    done = pytest_run(project, "-rs")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 skipped" in done.stdout
    assert "acp record -o" in done.stdout
