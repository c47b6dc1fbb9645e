"""A terminal's whole process tree ends with it, daemons included (Linux).

Each command leaves a ``sleep`` behind the ways daemons do: ``setsid`` (new session and
group), ``nohup``, a double fork (the sleep is orphaned at once), ``setsid`` plus a double
fork, and one that also ignores SIGTERM. The command itself exits at once, so the sleep
has left the command's process group, its session or its parent before the agent lets go
of the terminal. After ``terminal/release``, after ``terminal/kill`` and after the client
closes (through the real ToolkitClient) or its process ends (a client in a subprocess),
no process of the tree may be alive, nor a zombie. Each sleep has a unique duration
(``sleep 401.<nonce>``) by which the tests find it in ``/proc/*/cmdline``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import shutil
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from waiting import TIMEOUT, wait_until

from acpwire.agent.connection import AgentSideConnection
from acpwire.client import terminals
from acpwire.client.terminals import ExitStatus, TerminalManager
from acpwire.client.toolkit import ToolkitClient
from acpwire.protocol.errors import ErrorCode, RequestError
from acpwire.transports import memory_pair

from .toolkit_agent import ToolkitTestAgent

pytestmark = [
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or shutil.which("setsid") is None,
        reason="Linux only (/proc, setsid); other platforms kill the process group only",
    ),
    pytest.mark.slow,  # process trees that escape, and the client processes they outlive
]


ESCAPES = {
    # The sleep starts its own session (and group) and keeps the output pipe open.
    "setsid": "setsid sleep {mark} &",
    # Immune to hangups, output elsewhere: nothing ties it to the terminal but its parent.
    "nohup": "nohup sleep {mark} >/dev/null 2>&1 &",
    # The subshell exits at once: the sleep is an orphan in the command's session.
    "double-fork": "(sleep {mark} >/dev/null 2>&1 &) &",
    # Both: an orphan in a session of its own.
    "setsid-double-fork": "setsid sh -c '(sleep {mark} >/dev/null 2>&1 &) &' &",
    # As before, and SIGTERM is ignored (inherited by the sleep): only SIGKILL ends it.
    "setsid-double-fork-ignoring-sigterm": (
        "setsid sh -c 'trap \"\" TERM; (sleep {mark} >/dev/null 2>&1 &) &' &"
    ),
}


def new_mark() -> str:
    """A sleep duration no other process on this machine has in its command line."""
    return f"40{random.randrange(10)}.{random.randrange(10**9):09d}"


def processes_with(mark: str) -> list[int]:
    """Process ids whose command line has ``mark`` as one argument (zombies have none)."""
    wanted = mark.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if wanted in argv:
            found.append(int(entry))
    return found


def exists(pid: int) -> bool:
    """True while ``pid`` is in /proc at all: running, stopped or a zombie nobody reaped."""
    return os.path.exists(f"/proc/{pid}")


def alive(pid: int) -> bool:
    """True while ``pid`` runs (or is stopped); a zombie is dead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def zombie_children() -> list[int]:
    """Children of this test process that have exited and were never reaped."""
    zombies = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if state == "Z" and int(ppid) == os.getpid():
            zombies.append(int(entry))
    return zombies


@pytest.fixture
def mark() -> Iterator[str]:
    """A fresh mark; whatever still carries it after the test is killed (a failed test)."""
    value = new_mark()
    yield value
    for pid in processes_with(value):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@dataclass
class Setup:
    client: ToolkitClient
    agent: ToolkitTestAgent
    session_id: str
    zombies_before: set[int]  # left by earlier tests in this process, if any: not ours


@contextlib.asynccontextmanager
async def connected(tmp_path: Path) -> AsyncIterator[Setup]:
    """A ToolkitClient with its terminals, and the agent that calls them, over memory_pair()."""
    agent = ToolkitTestAgent()
    agent_end, client_end = memory_pair()
    served = AgentSideConnection(agent, agent_end)
    served.start()
    client = ToolkitClient(terminals=TerminalManager(kill_grace=0.3, exit_drain_timeout=0.2))
    client.connect(client_end)
    try:
        await asyncio.wait_for(client.initialize(), TIMEOUT)
        state = await client.new_session(tmp_path)
        yield Setup(client, agent, state.session_id, set(zombie_children()))
    finally:
        await client.close()
        await served.close()


async def escaped(setup: Setup, mark: str, how: str) -> tuple[str, list[int]]:
    """Create the terminal of escape ``how``; once its command exited, the sleep's pids."""
    script = ESCAPES[how].format(mark=mark)
    created = await setup.agent.client.create_terminal(setup.session_id, "sh", ["-c", script])
    terminal_id = created.terminal_id
    await asyncio.wait_for(
        setup.agent.client.wait_for_terminal_exit(setup.session_id, terminal_id), TIMEOUT
    )
    await wait_until(lambda: bool(processes_with(mark)), f"the escaped sleep {mark}")
    return terminal_id, processes_with(mark)


def assert_tree_gone(setup: Setup, mark: str, pids: list[int]) -> None:
    """No sleep with ``mark`` runs, none of ``pids`` is even a zombie, and the client
    has no unreaped child (a guard) that it did not have before."""
    assert processes_with(mark) == [], f"sleep {mark} survived"
    assert [pid for pid in pids if exists(pid)] == [], "a process of the tree is left (zombie?)"
    assert set(zombie_children()) <= setup.zombies_before


@pytest.mark.parametrize("how", sorted(ESCAPES))
async def test_release_ends_the_whole_tree(tmp_path: Path, mark: str, how: str) -> None:
    async with connected(tmp_path) as setup:
        terminal_id, pids = await escaped(setup, mark, how)
        await setup.agent.client.release_terminal(setup.session_id, terminal_id)
        assert_tree_gone(setup, mark, pids)


@pytest.mark.parametrize("how", sorted(ESCAPES))
async def test_kill_ends_the_whole_tree_and_the_terminal_stays(
    tmp_path: Path, mark: str, how: str
) -> None:
    """TERM-005: after terminal/kill the terminal is still valid; its exit status stays."""
    async with connected(tmp_path) as setup:
        terminal_id, pids = await escaped(setup, mark, how)
        await setup.agent.client.kill_terminal(setup.session_id, terminal_id)
        assert_tree_gone(setup, mark, pids)
        out = await setup.agent.client.terminal_output(setup.session_id, terminal_id)
        assert out.exit_status is not None
        assert out.exit_status.exit_code == 0  # the command had exited before the kill


@pytest.mark.parametrize("how", sorted(ESCAPES))
async def test_closing_the_client_ends_the_whole_tree(tmp_path: Path, mark: str, how: str) -> None:
    async with connected(tmp_path) as setup:
        _, pids = await escaped(setup, mark, how)
        await setup.client.close()
        assert_tree_gone(setup, mark, pids)


async def test_kill_while_the_command_runs_ends_it_and_its_daemons(
    tmp_path: Path, mark: str
) -> None:
    """The command still runs (it waits on a child) while its daemons have left it."""
    script = ESCAPES["setsid-double-fork"].format(mark=mark) + " sleep 1000; wait"
    async with connected(tmp_path) as setup:
        created = await setup.agent.client.create_terminal(setup.session_id, "sh", ["-c", script])
        await wait_until(lambda: bool(processes_with(mark)), f"the escaped sleep {mark}")
        pids = processes_with(mark)
        await setup.agent.client.kill_terminal(setup.session_id, created.terminal_id)
        status = await asyncio.wait_for(
            setup.agent.client.wait_for_terminal_exit(setup.session_id, created.terminal_id),
            TIMEOUT,
        )
        assert status.signal == "SIGTERM"
        assert_tree_gone(setup, mark, pids)


async def test_a_command_that_keeps_daemonizing_while_it_is_killed_leaves_nothing(
    tmp_path: Path, mark: str
) -> None:
    """It ignores SIGTERM and double-forks a setsid sleep every few milliseconds, also while
    the SIGKILL walk runs: whatever it forked before its SIGKILL is found and killed."""
    script = (
        "trap '' TERM; while :; do "
        f"setsid sh -c '(sleep {mark} >/dev/null 2>&1 &) &'; sleep 0.005; done"
    )
    async with connected(tmp_path) as setup:
        created = await setup.agent.client.create_terminal(setup.session_id, "sh", ["-c", script])
        await wait_until(lambda: len(processes_with(mark)) >= 3, f"a few sleeps {mark}")
        seen = processes_with(mark)
        await setup.agent.client.release_terminal(setup.session_id, created.terminal_id)
        assert_tree_gone(setup, mark, seen)


# ------------------------------------------------------------------ the client's process ends

CLIENT = """
import asyncio, os, sys
from acpwire.client.terminals import TerminalManager

def started(mark):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if mark in f.read().split(b"\\0"):
                    found.append(pid)
        except OSError:
            pass
    return found

async def main():
    manager = TerminalManager()  # never closed
    terminal_id = await manager.create("s", "sh", ["-c", sys.argv[1]])
    await manager.wait_for_exit("s", terminal_id)
    # The command has ended; its escaped sleep may not have started yet (a fork on its
    # way to exec): wait until it has, and tell the test its pids (once this process
    # ends, the tree may be gone before the test could look).
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while loop.time() < deadline and not started(sys.argv[3].encode()):
        await asyncio.sleep(0.01)
    print("ready", *started(sys.argv[3].encode()), flush=True)
    if sys.argv[2] == "exit":
        os._exit(0)
    if sys.argv[2] == "wait":
        await asyncio.sleep(1000)

asyncio.run(main())
"""
"""A client process that leaves its terminal running: it returns from main (``return``),
leaves at once without any cleanup (``exit``, as ``os._exit``), or waits to be SIGKILLed."""


@pytest.mark.parametrize("ending", ["return", "exit", "sigkill"])
@pytest.mark.parametrize("how", ["setsid", "setsid-double-fork-ignoring-sigterm"])
async def test_the_tree_ends_when_the_client_process_ends(mark: str, how: str, ending: str) -> None:
    script = ESCAPES[how].format(mark=mark)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        CLIENT,
        script,
        "wait" if ending == "sigkill" else ending,
        mark,
        stdout=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    ready, *seen = (await asyncio.wait_for(process.stdout.readline(), TIMEOUT)).split()
    assert ready == b"ready"
    assert seen, f"the escaped sleep {mark} never started"
    pids = [int(pid) for pid in seen]
    if ending == "sigkill":
        process.kill()
    await asyncio.wait_for(process.wait(), TIMEOUT)
    # Nobody waits for the end here but the tree's own guard: wait for it, bounded.
    await wait_until(lambda: not any(exists(pid) for pid in pids), f"sleep {mark} to end")
    assert processes_with(mark) == []


# ------------------------------------------------------------------------------- the guard


async def test_where_no_tree_can_be_guarded_terminals_run_as_plain_children(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The guard says the kernel refused PR_SET_CHILD_SUBREAPER: the process group is the
    only reach left. Terminals keep working that way, and it is logged once."""
    refusal = "import sys; sys.stderr.write('unsupported 22\\n')"
    monkeypatch.setattr(terminals, "_supervisor_command", lambda: [sys.executable, "-c", refusal])
    async with TerminalManager() as manager:
        for _ in range(2):  # the second one does not try the guard again
            terminal_id = await manager.create("s", "sh", ["-c", "echo $$"])
            status = await asyncio.wait_for(manager.wait_for_exit("s", terminal_id), TIMEOUT)
            assert status == ExitStatus(exit_code=0)
            pid = int((await manager.output("s", terminal_id)).output)
            assert manager._terminals[terminal_id].pid == pid  # the client's own child
            await manager.release("s", terminal_id)
    warnings = [r for r in caplog.records if "without their supervisor" in r.getMessage()]
    assert len(warnings) == 1


async def test_a_guard_that_fails_fails_the_create_and_nothing_runs_unguarded(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A guard that ends without starting the command (a crash, a broken interpreter) is not a
    reason to run commands unguarded: the create answers -32603, the next one tries again."""
    crash = "import sys; sys.stderr.write('Traceback: boom\\n'); sys.exit(1)"
    monkeypatch.setattr(terminals, "_supervisor_command", lambda: [sys.executable, "-c", crash])
    async with TerminalManager() as manager:
        for _ in range(2):
            with pytest.raises(RequestError) as caught:
                await manager.create("s", "true")
            assert caught.value.code == ErrorCode.INTERNAL_ERROR
            assert caught.value.data == {"command": "true", "reason": "supervisor_failed"}
        assert manager.terminal_ids("s") == []
    assert "Traceback: boom" in caplog.text  # what the guard said is logged


async def test_a_killed_guard_ends_the_terminal_and_its_command_group(mark: str) -> None:
    """A command can kill its own guard (same user); what is left is the group kill."""
    async with TerminalManager(kill_grace=0.3) as manager:
        terminal_id = await manager.create("s", "sleep", [mark])
        await wait_until(lambda: bool(processes_with(mark)), f"sleep {mark}")
        (command,) = processes_with(mark)
        os.kill(parent_of(command), signal.SIGKILL)
        status = await asyncio.wait_for(manager.wait_for_exit("s", terminal_id), TIMEOUT)
        assert status == ExitStatus(signal="SIGKILL")
        await wait_until(lambda: not alive(command), f"sleep {mark} to be killed")
        await manager.release("s", terminal_id)


async def test_killing_the_process_the_client_started_ends_the_tree(mark: str) -> None:
    """asyncio SIGKILLs the process it started when its transport is closed or collected
    before that process ended. The guard runs below it and hears of it (its parent-death
    signal), with the client alive and the guard's input still open: it ends the tree."""
    script = ESCAPES["setsid-double-fork-ignoring-sigterm"].format(mark=mark)
    async with TerminalManager(kill_grace=0.3) as manager:
        terminal_id = await manager.create("s", "sh", ["-c", script])
        await asyncio.wait_for(manager.wait_for_exit("s", terminal_id), TIMEOUT)
        await wait_until(lambda: bool(processes_with(mark)), f"the escaped sleep {mark}")
        pids = processes_with(mark)
        transport = manager._terminals[terminal_id].transport
        assert transport is not None
        os.kill(transport.get_pid(), signal.SIGKILL)
        await wait_until(lambda: not any(exists(pid) for pid in pids), f"sleep {mark} to end")
        await manager.release("s", terminal_id)
