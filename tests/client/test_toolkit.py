"""ToolkitClient against a real agent over memory_pair(): real files, real processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.agent.connection import AgentSideConnection
from acpwire.client.elicitation import ElicitationHandler, FormRequest, UrlRequest, accept
from acpwire.client.permissions import AllowAll, AskUser, PermissionRequest, Rule, Rules
from acpwire.client.terminals import TerminalManager
from acpwire.client.toolkit import ToolkitClient
from acpwire.protocol.errors import CapabilityError
from acpwire.schema import to_json
from acpwire.transports import memory_pair

from .toolkit_agent import ToolkitTestAgent


class MinimalAgent(ToolkitTestAgent):
    """Advertises nothing optional."""

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(protocol_version=1)


@contextlib.asynccontextmanager
async def connected(
    client: ToolkitClient, agent: ToolkitTestAgent | None = None, *, agent_checks: bool = True
) -> AsyncIterator[ToolkitClient]:
    agent_end, client_end = memory_pair()
    served = AgentSideConnection(
        agent or ToolkitTestAgent(), agent_end, check_capabilities=agent_checks
    )
    served.start()
    client.connect(client_end)
    try:
        await asyncio.wait_for(client.initialize(), TIMEOUT)
        yield client
    finally:
        await client.close()
        await served.close()


def fast_terminals() -> TerminalManager:
    return TerminalManager(kill_grace=0.5, exit_drain_timeout=0.2)


async def run(client: ToolkitClient, session_id: str, text: str) -> s.PromptResponse:
    return await asyncio.wait_for(client.prompt(session_id, text), TIMEOUT)


def reply(client: ToolkitClient, session_id: str) -> str:
    message = client.state(session_id).last_agent_message
    assert message is not None
    return message.text


# ---------------------------------------------------------------------- capabilities


def test_default_client_advertises_files_terminals_config_booleans_but_no_elicitation() -> None:
    """INIT-013, INIT-012: capabilities say exactly what the configured handlers serve."""
    caps = to_json(ToolkitClient(terminals=fast_terminals()).capabilities())
    assert caps == {
        "fs": {"readTextFile": True, "writeTextFile": True},
        "terminal": True,
        "session": {"configOptions": {"boolean": {}}, "notices": {}},
    }


def test_client_with_everything_switched_off_advertises_nothing() -> None:
    client = ToolkitClient(
        read_files=False,
        write_files=False,
        terminals=False,
        boolean_config_options=False,
        notices=False,
    )
    assert to_json(client.capabilities()) == {}


def test_elicitation_modes_and_terminal_auth_are_advertised_only_when_configured() -> None:
    """ELIC-005: one marker per mode with a callback; AUTH-002: auth.terminal only if configured."""
    client = ToolkitClient(
        elicitation=ElicitationHandler(form=lambda r: accept({})),
        terminal_auth=True,
        terminals=False,
    )
    caps = to_json(client.capabilities())
    assert caps["elicitation"] == {"form": {}}
    assert caps["auth"] == {"terminal": True}
    assert "terminal" not in caps


# ---------------------------------------------------------------------- files


async def test_agent_reads_a_file_in_the_session_folder(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello from disk\n")
    async with connected(ToolkitClient(terminals=fast_terminals())) as client:
        state = await client.new_session(tmp_path)
        await run(client, state.session_id, f"read {tmp_path / 'notes.txt'}")
        assert reply(client, state.session_id) == "hello from disk\n"
        [call] = state.tool_calls.values()
        assert call.status == "completed"
        assert call.kind == "read"


async def test_agent_cannot_read_outside_the_session_roots(tmp_path: Path) -> None:
    inside, outside = tmp_path / "project", tmp_path / "secret.txt"
    inside.mkdir()
    outside.write_text("no")
    async with connected(ToolkitClient(terminals=fast_terminals())) as client:
        state = await client.new_session(inside)
        await run(client, state.session_id, f"read {outside}")
        assert reply(client, state.session_id).startswith("error -32602")


async def test_agent_reads_a_file_in_an_additional_directory(tmp_path: Path) -> None:
    """SESS-016/SESS-022: the roots are cwd plus additionalDirectories."""
    project, extra = tmp_path / "project", tmp_path / "lib"
    project.mkdir()
    extra.mkdir()
    (extra / "util.py").write_text("x = 1\n")
    async with connected(ToolkitClient(terminals=fast_terminals())) as client:
        state = await client.new_session(project, additional_directories=[str(extra)])
        await run(client, state.session_id, f"read {extra / 'util.py'}")
        assert reply(client, state.session_id) == "x = 1\n"


async def test_allowed_write_creates_the_file(tmp_path: Path) -> None:
    """FS-003: fs/write_text_file creates a missing file."""
    target = tmp_path / "sub" / "new.txt"
    async with connected(
        ToolkitClient(permissions=AllowAll(), terminals=fast_terminals())
    ) as client:
        state = await client.new_session(tmp_path)
        await run(client, state.session_id, f"write {target} fresh")
        assert target.read_text() == "fresh"
        [call] = state.tool_calls.values()
        assert call.status == "completed"
        assert isinstance(call.content[0], s.Diff)


async def test_default_policy_rejects_writes_so_no_file_appears(tmp_path: Path) -> None:
    target = tmp_path / "never.txt"
    async with connected(ToolkitClient(terminals=fast_terminals())) as client:
        state = await client.new_session(tmp_path)
        result = await run(client, state.session_id, f"write {target} nope")
        assert result.stop_reason == "end_turn"
        assert reply(client, state.session_id) == "write refused"
        assert not target.exists()
        [call] = state.tool_calls.values()
        assert call.status == "failed"
        assert not call.awaiting_permission


async def test_files_of_an_unregistered_session_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    async with connected(ToolkitClient(terminals=fast_terminals())) as client:
        created = await client.agent.new_session(str(tmp_path))  # low tier: client not told
        await run(client, created.session_id, f"read {tmp_path / 'a.txt'}")
        assert reply(client, created.session_id).startswith("error -32002")
        client.register_session(created.session_id, tmp_path)
        await run(client, created.session_id, f"read {tmp_path / 'a.txt'}")
        assert reply(client, created.session_id) == "a"


# ---------------------------------------------------------------------- terminals


async def test_agent_runs_a_command_in_the_session_folder_with_its_env(tmp_path: Path) -> None:
    """Terminal env list becomes the child's environment; cwd defaults to the session cwd."""
    async with connected(ToolkitClient(terminals=fast_terminals())) as client:
        state = await client.new_session(tmp_path)
        (tmp_path / "probe.sh").write_text('echo "$TOOLKIT_TEST"; pwd\n')
        await run(client, state.session_id, "run sh ./probe.sh")
        text = reply(client, state.session_id)
        assert text.startswith("exit 0")
        assert "from-agent" in text
        assert os.path.realpath(str(tmp_path)) in text
        # TERM-006: the output stays visible after the agent released the terminal.
        snapshots = [t for t in state.terminals.values() if "from-agent" in t.output]
        assert snapshots and snapshots[0].released and snapshots[0].exit_code == 0


async def test_closing_a_session_releases_its_running_terminals(tmp_path: Path) -> None:
    manager = fast_terminals()
    async with connected(ToolkitClient(terminals=manager)) as client:
        state = await client.new_session(tmp_path)
        await run(client, state.session_id, "keep sleep 30")
        assert manager.terminal_ids(state.session_id) == [reply(client, state.session_id)]
        await client.close_session(state.session_id)
        assert manager.terminal_ids(state.session_id) == []
        assert state.closed


async def test_closing_the_client_releases_every_terminal(tmp_path: Path) -> None:
    manager = fast_terminals()
    async with connected(ToolkitClient(terminals=manager)) as client:
        state = await client.new_session(tmp_path)
        await run(client, state.session_id, "keep sleep 30")
        assert manager.terminal_ids(state.session_id)
    assert manager.terminal_ids(state.session_id) == []


# ---------------------------------------------------------------------- permissions


async def test_interactive_policy_choice_reaches_the_agent(tmp_path: Path) -> None:
    seen: list[PermissionRequest] = []

    def ask(request: PermissionRequest) -> str:
        seen.append(request)
        return "allow-always"

    async with connected(
        ToolkitClient(permissions=AskUser(ask), terminals=fast_terminals())
    ) as client:
        state = await client.new_session(tmp_path)
        await run(client, state.session_id, "permission")
        assert reply(client, state.session_id) == "selected allow-always"
        # The request only repeated the id; the policy saw the title and kind of the tool_call.
        assert seen[0].tool_call.title == "Delete /tmp/x"
        assert seen[0].tool_call.kind == "delete"


async def test_rules_policy_decides_by_kind(tmp_path: Path) -> None:
    policy = Rules([Rule("allow", kind="delete")])
    async with connected(ToolkitClient(permissions=policy, terminals=fast_terminals())) as client:
        state = await client.new_session(tmp_path)
        await run(client, state.session_id, "permission")
        assert reply(client, state.session_id) == "selected allow-once"


async def test_cancel_answers_a_pending_permission_prompt_cancelled(tmp_path: Path) -> None:
    """CANCEL-002, TOOL-003: after session/cancel the pending prompt is answered cancelled."""
    asked = asyncio.Event()
    prompt_closed = asyncio.Event()

    async def ask(request: PermissionRequest) -> str:
        asked.set()
        try:
            await asyncio.Event().wait()  # the user never answers
        except asyncio.CancelledError:
            prompt_closed.set()
            raise
        return "allow-once"  # pragma: no cover

    async with connected(
        ToolkitClient(permissions=AskUser(ask), terminals=fast_terminals())
    ) as client:
        state = await client.new_session(tmp_path)
        turn = asyncio.ensure_future(client.prompt(state.session_id, "permission"))
        await asyncio.wait_for(asked.wait(), TIMEOUT)
        assert client.pending_permissions(state.session_id) == 1
        [call] = state.tool_calls.values()
        assert call.awaiting_permission
        await client.cancel(state.session_id)
        result = await asyncio.wait_for(turn, TIMEOUT)
        assert result.stop_reason == "cancelled"
        assert reply(client, state.session_id) == "cancelled"
        await asyncio.wait_for(prompt_closed.wait(), TIMEOUT)
        assert client.pending_permissions(state.session_id) == 0
        # CANCEL-007: the agent's final update still landed after the cancel.
        assert call.status == "failed"
        assert state.stop_reason == "cancelled"
        assert not state.turn_running


async def test_cancel_marks_unfinished_tool_calls_and_ends_a_streaming_turn(tmp_path: Path) -> None:
    """CANCEL-001: unfinished tool calls show as cancelled once session/cancel is sent."""
    async with connected(ToolkitClient(terminals=fast_terminals())) as client:
        state = await client.new_session(tmp_path)
        started = asyncio.Event()
        state.subscribe(
            lambda st, update: started.set() if isinstance(update, s.AgentMessageChunk) else None
        )
        turn = asyncio.ensure_future(client.prompt(state.session_id, "slow"))
        await asyncio.wait_for(started.wait(), TIMEOUT)
        state.apply(s.ToolCallStart(tool_call_id="t", title="pending work"))
        await client.cancel(state.session_id)
        assert state.tool_calls["t"].display_status == "cancelled"
        assert (await asyncio.wait_for(turn, TIMEOUT)).stop_reason == "cancelled"
        assert reply(client, state.session_id) == "working"


async def test_permission_asked_after_cancel_in_the_same_turn_is_answered_cancelled(
    tmp_path: Path,
) -> None:
    """CANCEL-002: even a policy that allows everything does not answer once cancelled."""
    async with connected(
        ToolkitClient(permissions=AllowAll(), terminals=fast_terminals())
    ) as client:
        state = await client.new_session(tmp_path)
        waiting = asyncio.Event()
        state.subscribe(
            lambda st, update: waiting.set() if isinstance(update, s.AgentMessageChunk) else None
        )
        turn = asyncio.ensure_future(client.prompt(state.session_id, "late-permission"))
        await asyncio.wait_for(waiting.wait(), TIMEOUT)
        await client.cancel(state.session_id)
        assert (await asyncio.wait_for(turn, TIMEOUT)).stop_reason == "cancelled"
        assert reply(client, state.session_id) == "cancelled"
        # The next turn is served normally again.
        await run(client, state.session_id, "permission")
        assert reply(client, state.session_id) == "selected allow-once"


# ---------------------------------------------------------------------- elicitation


async def test_form_elicitation_is_asked_again_until_the_answer_fits_the_schema(
    tmp_path: Path,
) -> None:
    """ELIC-008/ELIC-010/ELIC-014: defaults pre-filled, invalid answers re-asked with errors."""
    requests: list[FormRequest] = []

    def form(request: FormRequest) -> s.ElicitationAcceptAction:
        requests.append(request)
        if len(requests) == 1:
            return accept({"count": 2})  # "name" is required
        return accept({**request.values, "name": "Ada"})

    handler = ElicitationHandler(form=form)
    async with connected(ToolkitClient(elicitation=handler, terminals=fast_terminals())) as client:
        state = await client.new_session(tmp_path)
        await run(client, state.session_id, "elicit form")
        assert (
            reply(client, state.session_id) == 'ElicitationAcceptAction {"count": 2, "name": "Ada"}'
        )
    assert requests[0].values == {"count": 2}
    assert requests[0].errors == ()
    assert requests[1].errors == ("name: required",)
    assert requests[0].message == "Who are you?"


async def test_elicitation_is_declined_when_no_handler_is_configured(tmp_path: Path) -> None:
    async with connected(ToolkitClient(terminals=fast_terminals()), agent_checks=False) as client:
        assert "elicitation" not in to_json(client.capabilities())
        state = await client.new_session(tmp_path)
        await run(client, state.session_id, "elicit form")
        assert reply(client, state.session_id) == "ElicitationDeclineAction"


async def test_url_elicitation_shows_the_host_and_reports_completion_once(tmp_path: Path) -> None:
    """ELIC-019: a repeated elicitation/complete is ignored."""
    urls: list[UrlRequest] = []
    completed: list[str] = []
    handler = ElicitationHandler(
        url=lambda r: urls.append(r) or accept(), on_complete=completed.append
    )
    async with connected(ToolkitClient(elicitation=handler, terminals=fast_terminals())) as client:
        state = await client.new_session(tmp_path)
        await run(client, state.session_id, "elicit url")
        assert reply(client, state.session_id) == "ElicitationAcceptAction"
    assert urls[0].host == "example.com"
    assert urls[0].warnings == ()
    assert completed == ["eli_1"]
    assert handler.outstanding == frozenset()


# ---------------------------------------------------------------------- state and sessions


async def test_state_shows_plan_messages_and_tool_call_that_was_updated_before_it_started(
    tmp_path: Path,
) -> None:
    async with connected(ToolkitClient(terminals=fast_terminals())) as client:
        state = await client.new_session(tmp_path)
        await run(client, state.session_id, "plan")
        assert [e.status for e in state.plan] == ["completed", "completed"]
        await run(client, state.session_id, "update-first")
        early = state.tool_calls["early"]
        assert (early.title, early.status, early.announced) == ("Early bird", "completed", True)
        await run(client, state.session_id, "echo hello world")
        # The client records the user's prompt; the agent's chunks form one message.
        assert [m.role for m in state.messages][-2:] == ["user", "agent"]
        assert state.messages[-1].text == "hello world"


async def test_loading_a_session_replays_its_history_into_the_same_state(tmp_path: Path) -> None:
    """SESS-003/SESS-005: load checks loadSession; the replay rebuilds the transcript once."""
    async with connected(
        ToolkitClient(permissions=AllowAll(), terminals=fast_terminals())
    ) as client:
        state = await client.new_session(tmp_path)
        await run(client, state.session_id, "echo one two")
        await run(client, state.session_id, f"write {tmp_path / 'f.txt'} data")
        live = [(m.role, m.text) for m in state.messages]
        loaded = await client.load_session(state.session_id, tmp_path)
        assert loaded is state
        assert [(m.role, m.text) for m in state.messages] == live
        assert list(state.tool_calls) == ["call_1"]
        assert state.current_mode_id == "ask"


async def test_session_helpers_list_resume_modes_config_and_delete(tmp_path: Path) -> None:
    async with connected(ToolkitClient(terminals=fast_terminals())) as client:
        first = await client.new_session(tmp_path)
        second = await client.new_session(tmp_path)
        listed = await client.all_sessions()  # the test agent pages one session at a time
        assert {i.session_id for i in listed} == {first.session_id, second.session_id}

        resumed = await client.resume_session(first.session_id, tmp_path)
        assert resumed is first

        await client.set_mode(first.session_id, "code")
        assert first.current_mode_id == "code"
        with pytest.raises(ValueError, match="no mode"):
            await client.set_mode(first.session_id, "yolo")  # MODE-001

        await client.set_config_option(first.session_id, "model", "smart")
        option = first.config_option("model")
        assert isinstance(option, s.SessionConfigSelect) and option.current_value == "smart"
        with pytest.raises(ValueError, match="no value"):
            await client.set_config_option(first.session_id, "model", "gpt-nothing")  # CFG-013

        await client.delete_session(second.session_id)
        assert second.session_id not in client.sessions
        assert [i.session_id for i in await client.all_sessions()] == [first.session_id]


async def test_helpers_refuse_methods_the_agent_did_not_advertise(tmp_path: Path) -> None:
    """SESS-004, SESS-009, SESS-013, SESS-017: nothing is sent without the capability."""
    async with connected(ToolkitClient(terminals=fast_terminals()), MinimalAgent()) as client:
        state = await client.new_session(tmp_path)
        for call in (
            client.load_session(state.session_id, tmp_path),
            client.resume_session(state.session_id, tmp_path),
            client.close_session(state.session_id),
            client.delete_session(state.session_id),
            client.list_sessions(),
        ):
            with pytest.raises(CapabilityError):
                await call
        with pytest.raises(CapabilityError, match="additionalDirectories"):
            await client.new_session(tmp_path, additional_directories=[str(tmp_path)])
        assert not client.supports("session/load")
        assert client.supports("session/prompt")
