"""The demo agent in process (memory pair): each command of docs/demo.md."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from _demo_harness import RecordingClient, in_process, run, wait_until, workspace
from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.client.elicitation import ElicitationHandler, FormRequest, accept
from acpwire.client.permissions import AllowAll, AskUser, PermissionRequest
from acpwire.demo import COMMANDS
from acpwire.testing import SchemaValidator


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return workspace(root)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


async def test_help_lists_every_command_and_commands_are_published(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:
        state = await client.new_session(ws)
        await wait_until(state, lambda: bool(state.available_commands))
        assert [c.name for c in state.available_commands] == [c.name for c in COMMANDS]
        stop, reply = await run(client, state.session_id, "help")
        assert stop == "end_turn"
        for command in COMMANDS:
            assert f"`{command.name}" in reply
        # the same as a slash command
        _, slash_reply = await run(client, state.session_id, "/help")
        assert slash_reply == reply


async def test_plain_text_gets_a_streamed_reply_that_echoes_it(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:
        state = await client.new_session(ws)
        stop, reply = await run(client, state.session_id, "what can you do?")
        assert stop == "end_turn"
        assert "what can you do?" in reply and "`help`" in reply
        assert len(client.agent_updates("agent_message_chunk")) > 1


async def test_read_shows_the_file_in_a_read_tool_call_with_its_location(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:
        state = await client.new_session(ws)
        stop, reply = await run(client, state.session_id, "read notes.txt 2 1")
        assert stop == "end_turn"
        assert "```txt\nbeta\n```" in reply
        (call,) = state.tool_calls.values()
        assert (call.kind, call.status) == ("read", "completed")
        assert [(loc.path, loc.line) for loc in call.locations] == [(str(ws / "notes.txt"), 2)]

        await run(client, state.session_id, "read missing.txt")
        failed = list(state.tool_calls.values())[-1]
        assert failed.status == "failed"


async def test_search_lists_matches_with_locations(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:
        state = await client.new_session(ws)
        stop, reply = await run(client, state.session_id, "search todo")
        assert stop == "end_turn"
        assert "Found 2 matches in 2 files" in reply
        assert "README.md:3: TODO: write docs" in reply
        (call,) = state.tool_calls.values()
        assert call.kind == "search" and call.status == "completed"
        assert {(loc.path, loc.line) for loc in call.locations} == {
            (str(ws / "README.md"), 3),
            (str(ws / "src" / "app.py"), 2),
        }
        _, reply = await run(client, state.session_id, "/search todo *.py")
        assert "Found 1 match in 1 file" in reply and "src/app.py:2:" in reply


async def test_edit_allowed_writes_through_the_client(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(permissions=AllowAll()), schema_validator, store) as c:
        state = await c.new_session(ws)
        stop, reply = await run(c, state.session_id, "edit notes.txt beta BETA")
        assert stop == "end_turn" and "changed through the client" in reply
        assert (ws / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"
        (call,) = state.tool_calls.values()
        assert call.kind == "edit" and call.status == "completed"
        (diff,) = [x for x in call.content if isinstance(x, s.Diff)]
        assert diff.old_text == "alpha\nbeta\ngamma\n" and diff.new_text == "alpha\nBETA\ngamma\n"
        assert call.locations[0].line == 2
        assert any(m.get("method") == "fs/write_text_file" for m in c.log.received)


async def test_edit_denied_leaves_the_file_and_fails_the_call(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:  # RejectAll
        state = await client.new_session(ws)
        _, reply = await run(client, state.session_id, "edit notes.txt beta BETA")
        assert (ws / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"
        (call,) = state.tool_calls.values()
        assert call.status == "failed"
        assert "was not changed" in reply and "Permission denied" in reply


async def test_allow_always_is_remembered_for_the_session(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    asked: list[PermissionRequest] = []

    def choose(request: PermissionRequest) -> str:
        asked.append(request)
        assert [o.kind for o in request.options] == ["allow_once", "allow_always", "reject_once"]
        option = request.option("allow_always")
        assert option is not None
        return option.option_id

    client = RecordingClient(permissions=AskUser(choose))
    async with in_process(client, schema_validator, store):
        state = await client.new_session(ws)
        await run(client, state.session_id, "write new.txt first line")
        await run(client, state.session_id, 'edit new.txt "first line" "second line"')
        assert (ws / "new.txt").read_text() == "second line\n"
        assert len(asked) == 1
        first = next(iter(state.tool_calls.values()))
        (diff,) = [x for x in first.content if isinstance(x, s.Diff)]
        assert diff.old_text is None  # a new file


async def test_run_shows_a_client_terminal_exit_code_and_output(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(permissions=AllowAll()), schema_validator, store) as c:
        state = await c.new_session(ws)
        stop, reply = await run(c, state.session_id, "run echo hi")
        assert stop == "end_turn"
        assert "exit code 0" in reply and "```\nhi\n```" in reply
        (call,) = state.tool_calls.values()
        assert call.kind == "execute" and call.status == "completed"
        (terminal_id,) = call.terminal_ids
        assert state.terminals[terminal_id].exit_code == 0
        assert state.terminals[terminal_id].output == "hi\n"
        _, reply = await run(c, state.session_id, "run false")
        assert "exit code 1" in reply
        assert list(state.tool_calls.values())[-1].status == "failed"


async def test_run_denied_never_starts_a_terminal(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:
        state = await client.new_session(ws)
        _, reply = await run(client, state.session_id, "run echo hi")
        assert "did not run" in reply
        assert not any(m.get("method") == "terminal/create" for m in client.log.received)


async def test_without_client_fs_and_terminals_it_falls_back_to_disk_and_processes(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    client = RecordingClient(
        permissions=AllowAll(), read_files=False, write_files=False, terminals=False
    )
    async with in_process(client, schema_validator, store):
        state = await client.new_session(ws)
        _, reply = await run(client, state.session_id, "read notes.txt")
        assert "alpha" in reply and "from disk" in reply
        await run(client, state.session_id, "edit notes.txt gamma GAMMA")
        assert (ws / "notes.txt").read_text().endswith("GAMMA\n")
        _, reply = await run(client, state.session_id, "run echo local")
        assert "local process" in reply and "local" in reply
        assert not any(
            str(m.get("method", "")).startswith(("fs/", "terminal/")) for m in client.log.received
        )


@pytest.mark.slow
async def test_plan_entries_move_through_their_statuses(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:
        state = await client.new_session(ws)
        snapshots: list[list[str]] = []
        state.subscribe(
            lambda st, u: (
                snapshots.append([str(e.status) for e in st.plan])
                if isinstance(u, s.PlanUpdate)
                else None
            )
        )
        stop, reply = await run(client, state.session_id, "plan")
        assert stop == "end_turn"
        p, i, c = "pending", "in_progress", "completed"
        assert snapshots == [
            [p, p, p, p],
            [i, p, p, p],
            [c, p, p, p],
            [c, i, p, p],
            [c, c, p, p],
            [c, c, i, p],
            [c, c, c, p],
            [c, c, c, i],
            [c, c, c, c],
        ]
        assert "3 text files" in reply and "2 TODO markers" in reply
        assert state.thoughts


async def test_think_streams_thought_chunks(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:
        state = await client.new_session(ws)
        await run(client, state.session_id, "think one two three four five")
        assert len(client.agent_updates("agent_thought_chunk")) == 2
        assert state.thoughts[-1].text.split() == ["one", "two", "three", "four", "five"]


async def test_modes_and_config_options_switch_from_the_client_and_by_command(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:  # RejectAll
        state = await client.new_session(ws)
        assert state.current_mode_id == "ask"
        ids = {o.id: o for o in state.config_options}
        assert list(ids) == ["mode", "model", "thought_level", "verbose"]
        model = ids["model"]
        assert isinstance(model, s.SessionConfigSelect) and model.category == "model"
        thought = ids["thought_level"]
        assert isinstance(thought, s.SessionConfigSelect) and thought.category == "thought_level"
        assert isinstance(ids["verbose"], s.SessionConfigBoolean)

        # code mode: no permission asked, so the edit goes through even under RejectAll
        await client.set_mode(state.session_id, "code")
        await run(client, state.session_id, "edit notes.txt alpha ALPHA")
        assert (ws / "notes.txt").read_text().startswith("ALPHA\n")

        _, reply = await run(client, state.session_id, "mode ask")
        assert state.current_mode_id == "ask" and "ask" in reply
        assert client.agent_updates("current_mode_update")

        await client.set_config_option(state.session_id, "model", "smart")
        await client.set_config_option(state.session_id, "thought_level", "high")
        await client.set_config_option(state.session_id, "verbose", True)
        _, reply = await run(client, state.session_id, "hello there")
        assert "Model `smart`: that is 2 words" in reply and "verbose=on" in reply
        assert state.thoughts

        _, reply = await run(client, state.session_id, "set model fast")
        option = state.config_option("model")
        assert isinstance(option, s.SessionConfigSelect) and option.current_value == "fast"


async def test_boolean_verbose_is_hidden_from_clients_without_boolean_options(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    client = RecordingClient(boolean_config_options=False)
    async with in_process(client, schema_validator, store):
        state = await client.new_session(ws)
        assert [o.id for o in state.config_options] == ["mode", "model", "thought_level"]


async def test_elicit_asks_a_form_and_replies_with_the_answer(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    forms: list[FormRequest] = []

    def form(request: FormRequest) -> s.ElicitationAcceptAction:
        forms.append(request)
        return accept({**request.values, "name": "Ada", "colour": "green"})

    client = RecordingClient(elicitation=ElicitationHandler(form=form))
    async with in_process(client, schema_validator, store):
        state = await client.new_session(ws)
        _, reply = await run(client, state.session_id, "elicit")
        assert reply == "Nice to meet you, Ada! Green is a fine colour.\n"
        (request,) = forms
        assert set(request.properties) == {"name", "colour"}
        colour = request.properties["colour"]
        assert isinstance(colour, s.StringPropertySchema) and colour.enum
        assert "green" in colour.enum


async def test_elicit_without_form_support_explains(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:
        state = await client.new_session(ws)
        _, reply = await run(client, state.session_id, "elicit")
        assert "does not take forms" in reply


async def test_stream_sends_n_chunks_of_one_message(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:
        state = await client.new_session(ws)
        _, reply = await run(client, state.session_id, "stream 200")
        chunks = client.agent_updates("agent_message_chunk")
        assert len(chunks) == 200
        assert len({c["messageId"] for c in chunks}) == 1
        assert reply.splitlines()[0] == "chunk 1 of 200" and reply.splitlines()[-1] == (
            "chunk 200 of 200"
        )


async def test_slow_turn_is_cancelled_promptly_and_leaves_nothing_running(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:
        state = await client.new_session(ws)
        turn = asyncio.ensure_future(client.prompt(state.session_id, "slow 600"))
        await wait_until(
            state,
            lambda: any(
                c.kind == "other" and c.status == "in_progress" for c in state.tool_calls.values()
            ),
        )
        await client.cancel(state.session_id)
        result = await asyncio.wait_for(turn, TIMEOUT)
        assert result.stop_reason == "cancelled"
        (call,) = state.tool_calls.values()
        assert call.status == "failed"
        last = state.last_agent_message
        assert last is not None and "cancelled" in last.text
        assert not [t for t in asyncio.all_tasks() if "run_turn" in repr(t.get_coro())]
        stop, _ = await run(client, state.session_id, "help")  # no turn left in progress
        assert stop == "end_turn"


async def test_usage_and_title(ws: Path, store: Path, schema_validator: SchemaValidator) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:
        state = await client.new_session(ws)
        await run(client, state.session_id, "usage")
        assert state.usage is not None and state.usage.size == 128_000 and state.usage.used > 0
        await run(client, state.session_id, "title My demo session")
        assert state.title == "My demo session"
        listed = await client.list_sessions()
        assert [i.title for i in listed.sessions] == ["My demo session"]


def test_backslash_n_in_unquoted_arguments_means_a_new_line() -> None:
    from acpwire.demo.text import split_args, unescape

    assert [unescape(w) for w in split_args(r"f.txt one\ntwo")] == ["f.txt", "one\ntwo"]
    assert split_args('a "b c" d') == ["a", "b c", "d"]


def test_stream_and_slow_take_a_number_in_range_or_show_their_usage() -> None:
    from acpwire.demo.agent import MAX_SLOW_SECONDS, MAX_STREAM_CHUNKS
    from acpwire.demo.text import number_argument

    assert number_argument([], int, 20, 1, MAX_STREAM_CHUNKS) == 20
    assert number_argument(["5000"], int, 20, 1, MAX_STREAM_CHUNKS) == 5000
    for bad in ("0", str(MAX_STREAM_CHUNKS + 1), "2.5", "x"):
        assert number_argument([bad], int, 20, 1, MAX_STREAM_CHUNKS) is None, bad
    assert number_argument(["2.5"], float, 10.0, 0.0, MAX_SLOW_SECONDS) == 2.5
    for bad in ("-1", "601", "nan", "inf", "soon"):
        assert number_argument([bad], float, 10.0, 0.0, MAX_SLOW_SECONDS) is None, bad


# ---------------------------------------------------------------------- details users noticed


async def test_lines_are_counted_as_a_person_counts_them(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    (ws / "one.txt").write_text("no final newline")
    async with in_process(RecordingClient(), schema_validator, store) as client:
        state = await client.new_session(ws)
        _, reply = await run(client, state.session_id, "read one.txt")
        assert "(1 line, read through the client)" in reply
        _, reply = await run(client, state.session_id, "read notes.txt")
        assert "(3 lines, read through the client)" in reply


async def test_a_granted_edit_moves_to_in_progress_after_the_permission(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    """PROMPT-004: pending while the diff waits for permission, in_progress once granted."""
    client = RecordingClient(permissions=AllowAll())
    async with in_process(client, schema_validator, store):
        state = await client.new_session(ws)
        await run(client, state.session_id, "write new.txt hello")
        updates = [*client.agent_updates("tool_call"), *client.agent_updates("tool_call_update")]
        assert [u.get("status") for u in updates] == ["pending", None, "in_progress", "completed"]
        (request,) = [
            m for m in client.log.received if m.get("method") == "session/request_permission"
        ]
        assert request["params"]["toolCall"]["status"] == "pending"


async def test_status_shows_only_the_options_the_client_was_offered(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    client = RecordingClient(boolean_config_options=False)
    async with in_process(client, schema_validator, store):
        state = await client.new_session(ws)
        _, reply = await run(client, state.session_id, "status")
        assert "`model` = `fast`" in reply and "`thought_level` = `low`" in reply
        assert "verbose" not in reply and "False" not in reply


async def test_one_word_is_one_word(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:
        state = await client.new_session(ws)
        await client.set_config_option(state.session_id, "thought_level", "high")
        await client.set_config_option(state.session_id, "model", "smart")
        await run(client, state.session_id, "think hmm")
        assert "That was 1 word." in "".join(t.text for t in state.thoughts)
        _, reply = await run(client, state.session_id, "hi")
        assert "that is 1 word." in reply


async def test_slow_says_how_many_steps_it_reported_when_cancelled(
    ws: Path, store: Path, schema_validator: SchemaValidator
) -> None:
    async with in_process(RecordingClient(), schema_validator, store) as client:
        state = await client.new_session(ws)
        turn = asyncio.ensure_future(client.prompt(state.session_id, "slow 600"))

        def reported() -> list[str]:
            return [
                c.content.text
                for call in state.tool_calls.values()
                for c in call.content
                if isinstance(c, s.Content) and isinstance(c.content, s.TextContent)
            ]

        await wait_until(state, lambda: bool(reported()))
        await client.cancel(state.session_id)
        assert (await asyncio.wait_for(turn, TIMEOUT)).stop_reason == "cancelled"
        steps = reported()[-1].split("(")[1].split("/")[0]
        last = state.last_agent_message
        assert last is not None and f"Stopped after {steps} of 1200 steps" in last.text
