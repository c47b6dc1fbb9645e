"""Replay in process: the recorded demo agent served to a ToolkitClient, the recorded
client driving the demo, and what each reports when the other side differs."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
from waiting import TIMEOUT

import acpwire.demo.agent as demo
from acpwire.client.permissions import AllowAll
from acpwire.client.toolkit import ToolkitClient
from acpwire.demo import build_app
from acpwire.recorder import read_cassette, record_to
from acpwire.recorder.conversation import Conversation
from acpwire.recorder.replay_agent import ReplayAgent, ReplayReport
from acpwire.recorder.replay_client import ReplayClient
from acpwire.recorder.verify import compare, format_differences
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports.memory import memory_pair

NOTES = "alpha\nbeta\ngamma\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text(NOTES)
    return root


async def demo_session(client: ToolkitClient, workspace: Path) -> list[str]:
    """Two turns (a read, an edit with permission); returns the agent's message texts."""
    await asyncio.wait_for(client.initialize(), TIMEOUT)
    session = await asyncio.wait_for(client.new_session(str(workspace)), TIMEOUT)
    for text in ("read notes.txt", "edit notes.txt beta BETA"):
        await asyncio.wait_for(client.prompt(session.session_id, text), TIMEOUT)
    return [m.text for m in session.messages]


async def record_demo(cassette: Path, workspace: Path, store: Path) -> list[str]:
    app = build_app(store)
    agent_end, client_end = memory_pair()
    served = app.connect(agent_end)
    client = ToolkitClient(permissions=AllowAll())
    client.connect(record_to(client_end, cassette))
    try:
        return await demo_session(client, workspace)
    finally:
        await client.close()
        await served.close()
        await app.aclose()


async def against_replay(
    cassette: Path, workspace: Path, validator: SchemaValidator
) -> tuple[list[str], ReplayReport]:
    agent_end, client_end = memory_pair()
    replay = ReplayAgent(Conversation.from_cassette(read_cassette(cassette)))
    serving = asyncio.ensure_future(replay.serve(agent_end))
    log = WireLog()
    client = ToolkitClient(permissions=AllowAll())
    client.connect(RecordingTransport(client_end, log))
    try:
        said = await demo_session(client, workspace)
    finally:
        await client.close()
    report = await asyncio.wait_for(serving, TIMEOUT)
    # Every message the replayed agent sent is valid ACP.
    validator.validate_conversation(log.received, log.sent)
    return said, report


async def test_the_recorded_demo_replayed_to_a_toolkit_client_says_the_same(
    tmp_path: Path, workspace: Path, schema_validator: SchemaValidator
) -> None:
    cassette = tmp_path / "demo.jsonl"
    live = await record_demo(cassette, workspace, tmp_path / "store.sqlite3")
    assert (workspace / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"
    (workspace / "notes.txt").write_text(NOTES)
    replayed, report = await against_replay(cassette, workspace, schema_validator)
    assert replayed == live
    assert report.ok, report
    # The replayed agent's fs/write_text_file went to the real client, which wrote it.
    assert (workspace / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"


async def test_a_client_that_answers_differently_is_reported(
    tmp_path: Path, workspace: Path, schema_validator: SchemaValidator
) -> None:
    cassette = tmp_path / "demo.jsonl"
    await record_demo(cassette, workspace, tmp_path / "store.sqlite3")
    (workspace / "notes.txt").write_text("alpha\nbeta\ndelta\n")  # not what was read then
    _, report = await against_replay(cassette, workspace, schema_validator)
    assert any(
        m.startswith("fs/read_text_file answer differs at result.content")
        for m in report.mismatches
    ), report.mismatches


async def test_a_request_the_recording_lacks_is_answered_with_an_error_not_a_guess(
    tmp_path: Path, workspace: Path, schema_validator: SchemaValidator
) -> None:
    cassette = tmp_path / "demo.jsonl"
    await record_demo(cassette, workspace, tmp_path / "store.sqlite3")
    agent_end, client_end = memory_pair()
    replay = ReplayAgent(Conversation.from_cassette(read_cassette(cassette)))
    serving = asyncio.ensure_future(replay.serve(agent_end))
    log = WireLog()
    client = ToolkitClient(permissions=AllowAll())
    client.connect(RecordingTransport(client_end, log))
    try:
        await asyncio.wait_for(client.initialize(), TIMEOUT)
        await asyncio.wait_for(client.new_session(str(workspace)), TIMEOUT)
        with pytest.raises(Exception, match="session/new is not in the recording"):
            await asyncio.wait_for(client.new_session(str(workspace)), TIMEOUT)
    finally:
        await client.close()
    report = await asyncio.wait_for(serving, TIMEOUT)
    assert report.unmatched == ["session/new is not in the recording (or was replayed already)"]
    schema_validator.validate_conversation(log.received, log.sent)


async def verify_against(cassette: Path, store: Path) -> str:
    """Play the recorded client side to a fresh demo app; the differences as text."""
    conversation = Conversation.from_cassette(read_cassette(cassette))
    app = build_app(store)
    agent_end, client_end = memory_pair()
    served = app.connect(agent_end)
    try:
        run = await asyncio.wait_for(ReplayClient(conversation).run(client_end), TIMEOUT)
    finally:
        await served.close()
        await app.aclose()
    assert run.report.ok, run.report
    return format_differences(compare(conversation, run))


async def test_the_recorded_client_replayed_to_the_demo_finds_no_difference(
    tmp_path: Path, workspace: Path
) -> None:
    cassette = tmp_path / "demo.jsonl"
    await record_demo(cassette, workspace, tmp_path / "one.sqlite3")
    text = await verify_against(cassette, tmp_path / "two.sqlite3")
    assert text == "no differences: the agent said what it said in the recording"


async def test_verify_against_a_demo_changed_in_one_place_shows_that_change(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cassette = tmp_path / "demo.jsonl"
    await record_demo(cassette, workspace, tmp_path / "one.sqlite3")
    original = demo.COMMANDS
    changed = [
        dataclasses.replace(c, description=c.description.replace("Read", "Load")) for c in original
    ]
    monkeypatch.setattr(demo, "COMMANDS", tuple(changed))
    text = await verify_against(cassette, tmp_path / "two.sqlite3")
    read = next(i for i, c in enumerate(original) if c.name == "read")
    assert text.splitlines()[0] == "1 message(s) differ:"
    assert text.splitlines()[1].startswith("changed  #")
    assert text.splitlines()[1].endswith("session/update available_commands_update")
    assert text.splitlines()[2:] == [
        f"    params.update.availableCommands[{read}].description: "
        '"Read a file through the client (tool call: read)" -> '
        '"Load a file through the client (tool call: read)"'
    ]
