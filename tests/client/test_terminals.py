"""TerminalManager: real child processes behind the terminal/* methods.

Every test runs twice: with each command under its guard (``_supervisor.py``, Linux) and
as a plain child of the client (the fallback on other platforms), which must behave alike.
The tree guarantee itself (daemons that leave the group) is in test_terminal_escape.py.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from waiting import TIMEOUT, wait_until

from acpwire.client import terminals
from acpwire.client.terminals import ExitStatus, TerminalManager, TerminalOutput
from acpwire.protocol.errors import ErrorCode, InvalidParams, RequestError, ResourceNotFound

SESSION = "sess-1"


@pytest.fixture(autouse=True, params=["guarded", "plain"])
def guard(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Managers made in the test start commands under their guard, or as plain children."""
    if request.param == "plain":
        monkeypatch.setattr(terminals, "_supervisor_command", lambda: None)
    elif terminals._supervisor_command() is None:
        pytest.skip("terminals have no guard on this platform")


@pytest.fixture
async def manager() -> AsyncIterator[TerminalManager]:
    async with TerminalManager(kill_grace=0.5, exit_drain_timeout=0.2) as m:
        yield m


def process_gone(pid: int) -> bool:
    """True once ``pid`` no longer runs (absent from /proc, or a zombie nobody reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    state = stat.rsplit(")", 1)[1].split()[0]
    return state in ("Z", "X")


async def output_when(
    manager: TerminalManager,
    terminal_id: str,
    condition: Callable[[str], bool],
    session_id: str = SESSION,
) -> TerminalOutput:
    """The terminal's output, once ``condition`` holds for its text."""

    async def snapshot() -> TerminalOutput | None:
        output = await manager.output(session_id, terminal_id)
        return output if condition(output.output) else None

    return await wait_until(snapshot, f"the output of {terminal_id} is what the test expects")


async def pids_printed(
    manager: TerminalManager, terminal_id: str, count: int, session_id: str = SESSION
) -> list[int]:
    """Wait for a first output line holding ``count`` process ids and return them."""
    out = await output_when(manager, terminal_id, lambda text: "\n" in text, session_id=session_id)
    pids = [int(word) for word in out.output.splitlines()[0].split()]
    assert len(pids) == count
    return pids


async def run_to_end(
    manager: TerminalManager, command: str, *args: str, **options: object
) -> tuple[ExitStatus, TerminalOutput]:
    terminal_id = await manager.create(SESSION, command, args, **options)  # type: ignore[arg-type]
    status = await asyncio.wait_for(manager.wait_for_exit(SESSION, terminal_id), TIMEOUT)
    output = await manager.output(SESSION, terminal_id)
    await manager.release(SESSION, terminal_id)
    return status, output


# ---------------------------------------------------------------------------- running


async def test_create_returns_while_the_command_still_runs(manager: TerminalManager) -> None:
    terminal_id = await manager.create(SESSION, "sleep", ["1000"])
    snapshot = await manager.output(SESSION, terminal_id)
    assert snapshot == TerminalOutput(output="", truncated=False, exit_status=None)
    assert manager.terminal_ids(SESSION) == [terminal_id]
    await manager.release(SESSION, terminal_id)


async def test_output_combines_stdout_and_stderr_in_order(manager: TerminalManager) -> None:
    status, out = await run_to_end(manager, "sh", "-c", "echo out; echo err >&2; echo out2")
    assert status == ExitStatus(exit_code=0)
    assert out == TerminalOutput(
        output="out\nerr\nout2\n", truncated=False, exit_status=ExitStatus(exit_code=0)
    )


async def test_exit_code_is_reported(manager: TerminalManager) -> None:
    status, out = await run_to_end(manager, "sh", "-c", "exit 3")
    assert status == ExitStatus(exit_code=3, signal=None)
    assert out.exit_status == status


async def test_arguments_are_passed_verbatim_without_a_shell(manager: TerminalManager) -> None:
    _, out = await run_to_end(manager, "printf", r"%s\n", "a b", "$HOME", "*")
    assert out.output == "a b\n$HOME\n*\n"


async def test_env_is_laid_over_the_inherited_environment(manager: TerminalManager) -> None:
    _, out = await run_to_end(
        manager,
        "sh",
        "-c",
        'printf "%s|%s" "$ACPWIRE_TEST_VAR" "$PATH"',
        env={"ACPWIRE_TEST_VAR": "hello world"},
    )
    assert out.output == f"hello world|{os.environ['PATH']}"


async def test_only_allow_listed_variables_of_the_client_are_inherited(
    manager: TerminalManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACPWIRE_TEST_API_KEY", "secret")
    monkeypatch.setenv("LANG", "C.UTF-8")
    _, out = await run_to_end(manager, "env", env={"ACPWIRE_TEST_VAR": "given"})
    names = {line.split("=", 1)[0] for line in out.output.splitlines()}
    assert "ACPWIRE_TEST_API_KEY" not in names
    assert {"PATH", "LANG", "ACPWIRE_TEST_VAR"} <= names
    assert names <= {*os.environ, "ACPWIRE_TEST_VAR"}


async def test_inherit_env_takes_names_and_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACPWIRE_TEST_ONE", "1")
    monkeypatch.setenv("ACPWIRE_TEST_TWO", "2")
    monkeypatch.setenv("ACPWIRE_OTHER", "3")
    async with TerminalManager(kill_grace=0.2, inherit_env=["PATH", "ACPWIRE_TEST_*"]) as chosen:
        _, out = await run_to_end(chosen, "env")
    assert sorted(out.output.splitlines()) == [
        "ACPWIRE_TEST_ONE=1",
        "ACPWIRE_TEST_TWO=2",
        f"PATH={os.environ['PATH']}",
    ]


async def test_command_runs_in_the_given_cwd(manager: TerminalManager, tmp_path: Path) -> None:
    expected = os.path.realpath(tmp_path) + "\n"
    _, out = await run_to_end(manager, "pwd", cwd=str(tmp_path))
    assert out.output == expected


async def test_command_not_found_names_the_command(manager: TerminalManager) -> None:
    with pytest.raises(RequestError) as caught:
        await manager.create(SESSION, "acpwire-no-such-command-xyz", ["--help"])
    assert "acpwire-no-such-command-xyz" in caught.value.message
    assert caught.value.code == ErrorCode.INVALID_PARAMS
    assert manager.terminal_ids(SESSION) == []


async def test_relative_cwd_is_invalid_params(manager: TerminalManager) -> None:
    with pytest.raises(InvalidParams) as caught:
        await manager.create(SESSION, "true", cwd="some/dir")
    assert "absolute" in caught.value.message


async def test_missing_cwd_is_invalid_params(manager: TerminalManager, tmp_path: Path) -> None:
    with pytest.raises(InvalidParams):
        await manager.create(SESSION, "true", cwd=str(tmp_path / "missing"))


async def test_negative_output_byte_limit_is_invalid_params(manager: TerminalManager) -> None:
    with pytest.raises(InvalidParams):
        await manager.create(SESSION, "true", output_byte_limit=-1)


@pytest.mark.slow
async def test_several_terminals_run_at_the_same_time(
    manager: TerminalManager, tmp_path: Path
) -> None:
    """The first command can only finish while the second one runs."""
    flag = str(tmp_path / "flag")
    waiter = await manager.create(
        SESSION, "sh", ["-c", 'while [ ! -e "$1" ]; do sleep 0.01; done; echo waited', "sh", flag]
    )
    setter = await manager.create(SESSION, "sh", ["-c", 'touch "$1"; echo set', "sh", flag])
    echoes = [
        await manager.create(SESSION, "sh", ["-c", 'echo "$1"', "sh", f"echo-{i}"])
        for i in range(6)
    ]
    ids = [waiter, setter, *echoes]
    assert len(set(ids)) == len(ids)
    statuses = await asyncio.wait_for(
        asyncio.gather(*(manager.wait_for_exit(SESSION, t) for t in ids)), TIMEOUT
    )
    assert all(s == ExitStatus(exit_code=0) for s in statuses)
    outputs = [(await manager.output(SESSION, t)).output for t in ids]
    assert outputs == ["waited\n", "set\n", *(f"echo-{i}\n" for i in range(6))]


async def test_wait_for_exit_returns_while_a_background_child_holds_the_output(
    manager: TerminalManager,
) -> None:
    terminal_id = await manager.create(SESSION, "sh", ["-c", "sleep 1000 & echo $!"])
    status = await asyncio.wait_for(manager.wait_for_exit(SESSION, terminal_id), TIMEOUT)
    assert status == ExitStatus(exit_code=0)
    (background,) = await pids_printed(manager, terminal_id, 1)
    assert not process_gone(background)
    await manager.release(SESSION, terminal_id)
    await wait_until(lambda: process_gone(background), "the background child to die")


# ---------------------------------------------------------------------------- output


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 64, 499])
@pytest.mark.parametrize("writes", ["one", "many"])
async def test_output_limit_drops_the_beginning_at_a_character_boundary(
    manager: TerminalManager, limit: int, writes: str
) -> None:
    """TERM-003: truncate only at character boundaries, dropping from the start."""
    unit = "a\u00e9\u20ac\U0001f600"  # 1 + 2 + 3 + 4 UTF-8 bytes
    full = unit * 50
    if writes == "one":
        args = ["%s", full]
        command = "printf"
    else:
        args = ["-c", 'for i in $(seq 50); do printf "%s" "$1"; done', "sh", unit]
        command = "sh"
    _, out = await run_to_end(manager, command, *args, output_byte_limit=limit)
    kept = out.output.encode("utf-8")
    assert out.truncated
    assert "\ufffd" not in out.output
    assert full.endswith(out.output)
    assert limit - 3 <= len(kept) <= limit


async def test_output_within_the_limit_is_complete(manager: TerminalManager) -> None:
    full = "a\u00e9\u20ac\U0001f600" * 50
    _, out = await run_to_end(manager, "printf", "%s", full, output_byte_limit=500)
    assert out.output == full
    assert not out.truncated


async def test_zero_output_limit_keeps_nothing(manager: TerminalManager) -> None:
    _, out = await run_to_end(manager, "echo", "hello", output_byte_limit=0)
    assert out == TerminalOutput(output="", truncated=True, exit_status=ExitStatus(exit_code=0))


async def test_character_split_across_writes_is_not_shown_half_written(
    manager: TerminalManager, tmp_path: Path
) -> None:
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    script = r"""printf 'a\342\202'; read line < "$1"; printf '\254'"""
    terminal_id = await manager.create(SESSION, "sh", ["-c", script, "sh", str(fifo)])
    early = await output_when(manager, terminal_id, lambda text: text != "")
    assert early.output == "a"

    def release_the_command() -> None:
        with open(fifo, "w") as f:
            f.write("go\n")

    await asyncio.wait_for(asyncio.to_thread(release_the_command), TIMEOUT)
    await asyncio.wait_for(manager.wait_for_exit(SESSION, terminal_id), TIMEOUT)
    assert (await manager.output(SESSION, terminal_id)).output == "a\u20ac"


async def test_invalid_bytes_become_replacement_characters(manager: TerminalManager) -> None:
    _, out = await run_to_end(manager, "sh", "-c", r"printf 'ok\377\n\342\202'")
    assert out.output == "ok\ufffd\n\ufffd"


# ---------------------------------------------------------------------------- per-session caps


async def test_a_session_holds_at_most_max_terminals_at_once(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    async with TerminalManager(kill_grace=0.2, max_terminals_per_session=2) as manager:
        first = await manager.create(SESSION, "sleep", ["1000"])
        await manager.create(SESSION, "sh", ["-c", "exit 0"])  # exited but held: counts
        await asyncio.wait_for(
            manager.wait_for_exit(SESSION, manager.terminal_ids(SESSION)[1]), TIMEOUT
        )
        with pytest.raises(InvalidParams) as caught:
            await manager.create(SESSION, "touch", [str(marker)])
        assert caught.value.code == ErrorCode.INVALID_PARAMS
        assert caught.value.data == {"reason": "too_many_terminals", "max": 2}
        assert "release" in caught.value.message
        assert not marker.exists()
        await manager.create("another-session", "true")  # other sessions are not affected
        await manager.release(SESSION, first)
        await manager.create(SESSION, "true")  # room again


async def test_concurrent_creates_cannot_overshoot_the_terminal_cap() -> None:
    async with TerminalManager(kill_grace=0.2, max_terminals_per_session=3) as manager:
        results = await asyncio.wait_for(
            asyncio.gather(
                *(manager.create(SESSION, "sleep", ["1000"]) for _ in range(12)),
                return_exceptions=True,
            ),
            TIMEOUT,
        )
        created = [r for r in results if isinstance(r, str)]
        refusals = [r for r in results if isinstance(r, InvalidParams)]
        assert len(created) == 3 and len(refusals) == 9
        assert all(r.data["reason"] == "too_many_terminals" for r in refusals)
        assert sorted(manager.terminal_ids(SESSION)) == sorted(created)


async def test_terminals_of_a_session_share_one_output_budget() -> None:
    async with TerminalManager(kill_grace=0.2, max_session_output_bytes=1000) as manager:
        ids = []
        for digit in ("1", "2"):
            terminal_id = await manager.create(SESSION, "printf", ["%0800d", digit])
            await asyncio.wait_for(manager.wait_for_exit(SESSION, terminal_id), TIMEOUT)
            ids.append(terminal_id)
        first, second = [await manager.output(SESSION, t) for t in ids]
        assert (first.output, first.truncated) == ("0" * 799 + "1", False)
        assert (second.output, second.truncated) == ("0" * 199 + "2", True)
        with pytest.raises(InvalidParams) as caught:
            await manager.create(SESSION, "true")
        assert caught.value.data == {"reason": "output_budget_exhausted", "maxBytes": 1000}
        await manager.create("another-session", "true")
        await manager.release(SESSION, ids[0])
        third = await manager.create(SESSION, "echo", ["room again"])
        await asyncio.wait_for(manager.wait_for_exit(SESSION, third), TIMEOUT)
        assert (await manager.output(SESSION, third)).output == "room again\n"


# ---------------------------------------------------------------------------- kill


async def test_kill_reports_the_signal_and_output_stays_readable(
    manager: TerminalManager,
) -> None:
    """TERM-005: a killed terminal is still valid until released."""
    terminal_id = await manager.create(SESSION, "sh", ["-c", "echo ready; exec sleep 1000"])
    await output_when(manager, terminal_id, lambda text: text == "ready\n")
    await manager.kill(SESSION, terminal_id)
    status = await asyncio.wait_for(manager.wait_for_exit(SESSION, terminal_id), TIMEOUT)
    assert status == ExitStatus(exit_code=None, signal="SIGTERM")
    assert await manager.output(SESSION, terminal_id) == TerminalOutput(
        output="ready\n", truncated=False, exit_status=status
    )
    assert manager.terminal_ids(SESSION) == [terminal_id]
    await manager.kill(SESSION, terminal_id)  # killing again is harmless
    await manager.release(SESSION, terminal_id)


async def test_kill_reaches_the_children_of_the_command(manager: TerminalManager) -> None:
    terminal_id = await manager.create(SESSION, "sh", ["-c", "sleep 1000 & echo $$ $!; wait"])
    leader, child = await pids_printed(manager, terminal_id, 2)
    await manager.kill(SESSION, terminal_id)
    status = await asyncio.wait_for(manager.wait_for_exit(SESSION, terminal_id), TIMEOUT)
    assert status.signal == "SIGTERM"
    await wait_until(lambda: process_gone(leader) and process_gone(child), "the group to die")


async def test_command_ignoring_sigterm_is_killed_with_sigkill() -> None:
    async with TerminalManager(kill_grace=0.2) as manager:
        terminal_id = await manager.create(
            SESSION, "sh", ["-c", "trap '' TERM; echo ready; while :; do sleep 1; done"]
        )
        await output_when(manager, terminal_id, lambda text: text == "ready\n")
        await manager.kill(SESSION, terminal_id)
        status = await asyncio.wait_for(manager.wait_for_exit(SESSION, terminal_id), TIMEOUT)
        assert status == ExitStatus(signal="SIGKILL")


async def test_killing_a_finished_command_keeps_its_exit_code(manager: TerminalManager) -> None:
    terminal_id = await manager.create(SESSION, "sh", ["-c", "exit 7"])
    await asyncio.wait_for(manager.wait_for_exit(SESSION, terminal_id), TIMEOUT)
    await manager.kill(SESSION, terminal_id)
    assert (await manager.output(SESSION, terminal_id)).exit_status == ExitStatus(exit_code=7)


async def test_command_killed_by_another_signal_reports_its_name(
    manager: TerminalManager,
) -> None:
    status, _ = await run_to_end(manager, "sh", "-c", "kill -INT $$")
    assert status == ExitStatus(signal=signal.SIGINT.name)


# ---------------------------------------------------------------------------- release


async def test_release_kills_the_command_and_invalidates_the_id(
    manager: TerminalManager,
) -> None:
    """TERM-007: after release the terminal id is invalid."""
    terminal_id = await manager.create(SESSION, "sh", ["-c", "echo $$; exec sleep 1000"])
    (pid,) = await pids_printed(manager, terminal_id, 1)
    await manager.release(SESSION, terminal_id)
    assert process_gone(pid)
    assert manager.terminal_ids(SESSION) == []
    for call in (
        manager.output(SESSION, terminal_id),
        manager.wait_for_exit(SESSION, terminal_id),
        manager.kill(SESSION, terminal_id),
        manager.release(SESSION, terminal_id),
    ):
        with pytest.raises(ResourceNotFound) as caught:
            await call
        assert caught.value.code == ErrorCode.RESOURCE_NOT_FOUND
        assert caught.value.data == {"terminalId": terminal_id}


async def test_unknown_terminal_id_answers_resource_not_found(
    manager: TerminalManager,
) -> None:
    with pytest.raises(ResourceNotFound):
        await manager.output(SESSION, "term_does_not_exist")


async def test_terminal_of_another_session_is_not_reachable(manager: TerminalManager) -> None:
    terminal_id = await manager.create(SESSION, "sleep", ["1000"])
    for call in (
        manager.output("other", terminal_id),
        manager.kill("other", terminal_id),
        manager.release("other", terminal_id),
    ):
        with pytest.raises(ResourceNotFound):
            await call
    assert manager.terminal_ids("other") == []
    assert (await manager.output(SESSION, terminal_id)).exit_status is None
    await manager.release(SESSION, terminal_id)


async def test_cancelled_release_still_kills_the_command(manager: TerminalManager) -> None:
    terminal_id = await manager.create(SESSION, "sh", ["-c", "echo $$; exec sleep 1000"])
    (pid,) = await pids_printed(manager, terminal_id, 1)
    release = asyncio.create_task(manager.release(SESSION, terminal_id))
    await asyncio.sleep(0)  # let release start, then cancel it
    release.cancel()
    with pytest.raises(asyncio.CancelledError):
        await release
    await wait_until(lambda: process_gone(pid), "the released command to die")
    with pytest.raises(ResourceNotFound):
        await manager.output(SESSION, terminal_id)


async def test_release_session_stops_only_that_sessions_commands(
    manager: TerminalManager,
) -> None:
    script = "sleep 1000 & echo $$ $!; wait"
    mine = [await manager.create("s1", "sh", ["-c", script]) for _ in range(2)]
    theirs = await manager.create("s2", "sh", ["-c", script])
    my_pids = [pid for t in mine for pid in await pids_printed(manager, t, 2, "s1")]
    their_pids = await pids_printed(manager, theirs, 2, "s2")

    await manager.release_session("s1")

    await wait_until(lambda: all(process_gone(p) for p in my_pids), "s1's processes to die")
    assert manager.terminal_ids("s1") == []
    assert not any(process_gone(p) for p in their_pids)
    assert (await manager.output("s2", theirs)).exit_status is None


async def test_aclose_leaves_no_process_alive(tmp_path: Path) -> None:
    manager = TerminalManager(kill_grace=0.2)
    ids = [
        await manager.create("s1", "sh", ["-c", "sleep 1000 & echo $$ $!; wait"]),
        await manager.create("s2", "sh", ["-c", "trap '' TERM; sleep 1000 & echo $$ $!; wait"]),
        await manager.create("s2", "sh", ["-c", "sleep 1000 & echo $!"]),
    ]
    pids = [
        *await pids_printed(manager, ids[0], 2, "s1"),
        *await pids_printed(manager, ids[1], 2, "s2"),
        *await pids_printed(manager, ids[2], 1, "s2"),
    ]
    await manager.aclose()
    await wait_until(lambda: all(process_gone(p) for p in pids), "every process to die")
    assert manager.terminal_ids("s1") == manager.terminal_ids("s2") == []
    with pytest.raises(RequestError):
        await manager.create("s1", "true")


async def test_leaving_the_context_releases_everything() -> None:
    async with TerminalManager() as manager:
        terminal_id = await manager.create(SESSION, "sh", ["-c", "echo $$; exec sleep 1000"])
        (pid,) = await pids_printed(manager, terminal_id, 1)
    assert process_gone(pid)
    with pytest.raises(ResourceNotFound):
        await manager.output(SESSION, terminal_id)
