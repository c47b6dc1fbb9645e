"""``acp demo-agent``: the options docs/demo.md documents, and a quiet first run.

The demo keeps its sessions in the user data folder; the first run creates that folder
and says so once on stderr (also through ``acp chat``), later runs say nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire.client import AllowAll, ToolkitClient, open_agent

pytestmark = pytest.mark.slow  # acp chat runs as a process

ACP = [sys.executable, "-m", "acpwire.cli.main"]


@pytest.fixture
def fresh_home(tmp_path: Path) -> dict[str, str]:
    """A user with an empty home and XDG data folder, and no acpwire settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACPWIRE_", "XDG_"))}
    (tmp_path / "home").mkdir()
    return {**env, "HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "xdg")}


async def test_demo_agent_store_option_keeps_sessions_in_that_file(tmp_path: Path) -> None:
    store = tmp_path / "sessions" / "demo.sqlite3"
    client = ToolkitClient(permissions=AllowAll())
    async with open_agent([*ACP, "demo-agent", "--store", str(store)], client=client):
        state = await client.new_session(str(tmp_path))
        result = await client.prompt(state.session_id, "title Kept here")
        assert result.stop_reason == "end_turn"
        listed = await client.list_sessions(cwd=str(tmp_path))
        assert [info.session_id for info in listed.sessions] == [state.session_id]
    assert store.is_file()


def test_demo_agent_help_names_the_store_option() -> None:
    done = subprocess.run(
        [*ACP, "demo-agent", "--help"], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0
    assert done.stdout == ""  # stdout is the protocol channel
    assert "--store URL" in done.stderr


def run_twice(args: list[str], env: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    """The same acp command run twice by the same user (no stdin: the agent ends at once)."""
    return [
        subprocess.run(
            [*ACP, *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=env,
            timeout=TIMEOUT,
        )
        for _ in range(2)
    ]


def test_the_demo_says_once_on_stderr_where_it_created_its_data_folder(
    tmp_path: Path, fresh_home: dict[str, str]
) -> None:
    folder = tmp_path / "xdg" / "acpwire"
    runs = run_twice(["demo-agent"], fresh_home)
    assert [run.returncode for run in runs] == [0, 0]
    assert [run.stdout for run in runs] == ["", ""]
    assert (
        runs[0].stderr
        == f"acpwire demo: created {folder} to keep sessions in acpwire-demo.sqlite3\n"
    )
    assert runs[1].stderr == ""
    assert folder.is_dir()
    assert not (tmp_path / "home" / ".local").exists()


def test_acp_chat_shows_the_demo_data_folder_on_its_first_run_only(
    tmp_path: Path, fresh_home: dict[str, str]
) -> None:
    folder = tmp_path / "xdg" / "acpwire"
    runs = run_twice(["chat", "--cwd", str(tmp_path), "--prompt", "help"], fresh_home)
    assert [run.returncode for run in runs] == [0, 0], runs[0].stderr
    assert f"created {folder}" in runs[0].stderr
    assert "created" not in runs[1].stderr
