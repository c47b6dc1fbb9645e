"""The demo agent as a real process: `python -m acpwire.demo`, persistence across restarts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _demo_harness import DEMO, RecordingClient, run, subprocess_agent, workspace
from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.client.connection import Client, ClientSideConnection, connect
from acpwire.client.permissions import AllowAll
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports import spawn

pytestmark = pytest.mark.slow  # the demo agent runs as a process


def test_help_goes_to_stderr_and_stdout_stays_clean() -> None:
    done = subprocess.run([*DEMO, "--help"], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0
    assert done.stdout == ""
    assert "--store URL" in done.stderr


def test_a_store_url_it_cannot_use_is_refused_with_the_reason() -> None:
    done = subprocess.run(
        [*DEMO, "--store", "redis://cache/0"], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "unknown store URL scheme 'redis'" in done.stderr


async def test_a_store_named_by_url_and_then_by_the_environment_is_the_same_store(
    tmp_path: Path, schema_validator: SchemaValidator, official_schema: dict[str, Any]
) -> None:
    """--store sqlite:///... writes the file; $ACPWIRE_STORE names it for the next process."""
    (tmp_path / "ws").mkdir()
    ws = workspace(tmp_path / "ws")
    db = tmp_path / "by url.sqlite3"
    url = "sqlite:///" + db.as_posix().lstrip("/").replace(" ", "%20")
    first = RecordingClient()
    async with subprocess_agent(first, schema_validator, url):
        sid = (await first.new_session(ws)).session_id
        await run(first, sid, "read notes.txt")
    assert db.is_file()

    second = RecordingClient()
    env = {**os.environ, "ACPWIRE_STORE": str(db), "ACPWIRE_DATA_DIR": str(tmp_path / "data")}
    async with subprocess_agent(second, SchemaValidator(official_schema), None, env):
        listed = await second.list_sessions(cwd=str(ws))
        assert [i.session_id for i in listed.sessions] == [sid]
    assert not (tmp_path / "data").exists()


async def test_a_memory_store_keeps_sessions_for_the_life_of_the_process(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    (tmp_path / "ws").mkdir()
    ws = workspace(tmp_path / "ws")
    client = RecordingClient()
    env = {**os.environ, "ACPWIRE_DATA_DIR": str(tmp_path / "data")}
    async with subprocess_agent(client, schema_validator, "memory:", env):
        sid = (await client.new_session(ws)).session_id
        await run(client, sid, "read notes.txt")
        listed = await client.list_sessions(cwd=str(ws))
        assert [i.session_id for i in listed.sessions] == [sid]
    assert not (tmp_path / "data").exists()


def test_an_unknown_option_is_a_usage_error_on_stderr() -> None:
    done = subprocess.run([*DEMO, "--bogus"], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("usage: python -m acpwire.demo")
    assert done.stderr.count("usage:") == 1
    assert "unrecognized arguments: --bogus" in done.stderr


async def test_a_real_process_reads_edits_and_runs(
    tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    workspace(ws)
    client = RecordingClient(permissions=AllowAll())
    async with subprocess_agent(client, schema_validator, tmp_path / "store.db"):
        init = client.agent.initialize_response
        assert init is not None and init.agent_capabilities.load_session is True
        state = await client.new_session(ws)
        stop, reply = await run(client, state.session_id, "help")
        assert stop == "end_turn" and "`read PATH [LINE [LIMIT]]`" in reply
        _, reply = await run(client, state.session_id, "/read README.md")
        assert "# Demo project" in reply
        await run(client, state.session_id, "edit README.md Demo Sample")
        assert (ws / "README.md").read_text().startswith("# Sample project")
        _, reply = await run(client, state.session_id, "run echo hi")
        assert "exit code 0" in reply and "hi\n" in reply


async def test_sessions_are_listed_and_loaded_by_a_second_process(
    tmp_path: Path, schema_validator: SchemaValidator, official_schema: dict[str, Any]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    workspace(ws)
    store = tmp_path / "store.db"
    first = RecordingClient()
    async with subprocess_agent(first, schema_validator, store):
        state = await first.new_session(ws)
        sid = state.session_id
        await run(first, sid, "read notes.txt")
        await run(first, sid, "title Persisted session")

    second = RecordingClient()
    async with subprocess_agent(second, SchemaValidator(official_schema), store):
        listed = await second.list_sessions(cwd=str(ws))
        assert [(i.session_id, i.title) for i in listed.sessions] == [(sid, "Persisted session")]
        loaded = await second.load_session(sid, ws)
        assert [m.text for m in loaded.messages if m.role == "user"] == [
            "read notes.txt",
            "title Persisted session",
        ]
        (call,) = loaded.tool_calls.values()
        assert call.kind == "read" and call.status == "completed"
        assert any("alpha" in m.text for m in loaded.messages if m.role == "agent")
        assert loaded.current_mode_id == "ask"
        stop, reply = await run(second, sid, "mode code")
        assert stop == "end_turn" and "Switched to **code**" in reply
        assert loaded.current_mode_id == "code"
        assert isinstance(loaded.config_options[0], s.SessionConfigSelect)


class _UnstableClient(Client):
    unstable = True

    async def session_update(self, params: s.SessionNotification) -> None:
        pass


async def test_with_unstable_the_demo_forks_retitles_and_archives_its_sessions(
    unstable_schema_validator: SchemaValidator,
) -> None:
    """``--unstable`` opts the demo in: the unstable session methods work; without it they
    are neither advertised nor routed."""
    log = WireLog()
    args = ["-m", "acpwire.demo", "--unstable", "--store", "memory:"]
    conn = ClientSideConnection(
        _UnstableClient(), RecordingTransport(await spawn(sys.executable, args), log)
    )
    try:
        init = await conn.initialize()
        caps = init.agent_capabilities.session_capabilities
        assert not isinstance(caps, s.UnsetType)
        assert not isinstance(caps.fork, s.UnsetType) and not isinstance(caps.title, s.UnsetType)
        parent = (await conn.agent.new_session("/work/project")).session_id
        await conn.agent.prompt(parent, "hello")
        fork = (await conn.agent.fork_session(parent, "/work/project")).session_id
        await conn.agent.set_session_title(fork, "Forked")
        await conn.agent.archive_session(parent)
        listed = (await conn.agent.list_sessions()).sessions
        assert [(i.session_id, i.title) for i in listed] == [(fork, "Forked")]
        assert (await conn.agent.session_status(parent)).status == "open"
    finally:
        await conn.close()
    unstable_schema_validator.validate_conversation(log.received, log.sent)
    async with connect(_UnstableClient(), sys.executable, [*args[:2], *args[3:]]) as stable:
        caps = stable.agent.remote_capabilities.session_capabilities
        assert isinstance(caps.fork, s.UnsetType) and isinstance(caps.archive, s.UnsetType)
