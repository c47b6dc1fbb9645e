"""The client's terminals behind ``terminal/*``: real child processes with captured output.

Spec (terminals.mdx): ``terminal/create`` starts ``command`` with ``args``, ``env``,
``cwd`` and an optional ``outputByteLimit`` and answers a ``terminalId`` at once while
the command runs. ``terminal/output`` answers the output so far, whether it was
``truncated`` and, once the command has exited, its ``exitStatus``. When the limit is
exceeded the client drops output from the beginning, only at character boundaries
(TERM-003). ``terminal/wait_for_exit`` answers ``exitCode``/``signal``;
``terminal/kill`` stops the command but the terminal stays usable;
``terminal/release`` kills the command if it still runs and makes the id invalid.

SDK policy (not spec text), enforced by :class:`TerminalManager`:

* The command is executed directly (no shell), with standard input connected to
  ``/dev/null``. Standard output and standard error share one pipe, so the output
  interleaves as in a terminal.
* The environment is an allow-list, not this process's whole environment: only the
  variables whose names match ``inherit_env`` (default :data:`DEFAULT_INHERITED_ENV`:
  ``PATH``, ``HOME``, ``USER``, ``SHELL``, ``LANG``, ``LC_*``, ``TERM``, ``TMPDIR`` and the
  like) are passed on, with the agent's ``env`` laid over them. A client started with
  API keys or cloud credentials in its environment does not hand them to the agent.
  ``inherit_env=("*",)`` passes everything (the behaviour before this rule).
* Per session, at most ``max_terminals_per_session`` terminals are held at once (released
  ones do not count) and the output kept by all of them together is capped at
  ``max_session_output_bytes``: once the cap is reached, new output of a terminal drops
  that terminal's oldest output (reported as ``truncated``), and ``terminal/create``
  answers -32602 with ``data.reason`` ``"too_many_terminals"`` or
  ``"output_budget_exhausted"`` until the agent releases terminals.
* A terminal owns its command's whole process tree. On Linux the client starts a guard
  (``_supervisor.py``, one small Python process per terminal) that runs the command and is
  a child subreaper: whatever a descendant does to leave (``setsid``, ``nohup``, a double
  fork), it stays below the guard. ``kill``, ``release`` and closing the manager send
  SIGTERM to every process of the tree, SIGKILL after ``kill_grace`` seconds, and return
  once the guard has reaped them all (no zombie is left). When the client process ends
  without closing the manager, SIGKILL included, the guard's input ends and it kills the
  tree. The client process itself is not made a subreaper: other code in it sees no change.
* Elsewhere (macOS, the BSDs), or where the guard cannot run (logged once), the command is
  the client's own child and leads its own session and process group: SIGTERM and SIGKILL
  go to the group, and a descendant that starts its own session (a daemon) escapes it.
* Output is kept as bytes, at most ``outputByteLimit`` (and at most the manager's
  ``max_output_bytes``), and decoded as UTF-8 when asked; only genuinely invalid bytes
  become U+FFFD. A character still being written is held back until it is complete.
* The exit status becomes visible once the command has exited and its output pipe
  is drained, or ``exit_drain_timeout`` seconds after the exit when a background child
  keeps the pipe open (its later output is still collected).
* Every method takes the ``session_id`` as well: a terminal id of another session, an
  unknown id and a released id all answer -32002 (:class:`ResourceNotFound`) with
  ``data == {"terminalId": ...}``. Bad arguments answer -32602 (:class:`InvalidParams`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fnmatch
import logging
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from acpwire._closing import AcloseOnExit
from acpwire._tasks import TaskSet
from acpwire._waits import within
from acpwire.protocol.errors import InternalError, InvalidParams, ResourceNotFound

__all__ = [
    "DEFAULT_INHERITED_ENV",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "DEFAULT_MAX_SESSION_OUTPUT_BYTES",
    "DEFAULT_MAX_TERMINALS_PER_SESSION",
    "ExitStatus",
    "TerminalManager",
    "TerminalOutput",
]

DEFAULT_MAX_OUTPUT_BYTES = 16 * 1024 * 1024
"""Output kept per terminal when the agent gives no smaller ``outputByteLimit`` (16 MiB)."""

DEFAULT_MAX_SESSION_OUTPUT_BYTES = 64 * 1024 * 1024
"""Output kept by all terminals of one session together (64 MiB: four full terminals)."""

DEFAULT_MAX_TERMINALS_PER_SESSION = 16
"""Terminals one session may hold at once; agents run a few, a loop runs thousands."""

DEFAULT_INHERITED_ENV: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "TMPDIR",
    "TZ",
)
"""Names (or :mod:`fnmatch` patterns) of the client's variables a terminal inherits:
what commands need to find programs, the home folder, the locale and the terminal type,
and nothing that usually holds a secret (tokens, keys, ``SSH_AUTH_SOCK``)."""

log = logging.getLogger("acpwire.client.terminals")

_SUPERVISOR = Path(__file__).with_name("_supervisor.py")
"""The program that guards a terminal's process tree on Linux (run, never imported)."""

_GUARD_START_TIMEOUT = 30.0
"""How long a guard may take to start a command: a Python start, even on a loaded machine,
takes well under a second; more means ``sys.executable`` is not a Python that runs it."""

_SIGKILL_WAIT = 5.0
"""How long to wait for a process to vanish after SIGKILL before giving up on it."""


@dataclass(frozen=True)
class ExitStatus:
    """How a command ended: ``exit_code`` if it exited, ``signal`` (e.g. ``"SIGTERM"``) if killed."""

    exit_code: int | None = None
    signal: str | None = None


@dataclass(frozen=True)
class TerminalOutput:
    """A snapshot of a terminal: ``exit_status`` is ``None`` while the command runs."""

    output: str
    truncated: bool
    exit_status: ExitStatus | None


def _exit_status(returncode: int) -> ExitStatus:
    if returncode >= 0:
        return ExitStatus(exit_code=returncode)
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"SIG{-returncode}"
    return ExitStatus(signal=name)


def _complete_prefix_length(data: bytes | bytearray) -> int:
    """Length of ``data`` without a trailing, still incomplete UTF-8 sequence."""
    size = len(data)
    for back in range(1, min(4, size) + 1):
        byte = data[size - back]
        if byte & 0xC0 == 0x80:  # continuation byte: look further back for the lead
            continue
        if byte < 0xC0:  # ASCII: nothing pending
            return size
        needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
        return size - back if needed > back else size
    return size


class _Budget:
    """Output bytes kept by the terminals of one session, against their common cap."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.used = 0


class _Terminal:
    """One command, its output buffer and its lifecycle events (loop-thread only)."""

    def __init__(
        self,
        terminal_id: str,
        session_id: str,
        limit: int,
        drain_timeout: float,
        budget: _Budget,
        *,
        guarded: bool,
    ) -> None:
        self.id = terminal_id
        self.session_id = session_id
        self.limit = limit
        self.budget = budget
        self.released = False
        self.pid = 0  # the command's
        self.guarded = guarded  # run under _supervisor.py; else the command is the child
        self.transport: asyncio.SubprocessTransport | None = None
        self.control: asyncio.WriteTransport | None = None  # the guard's standard input
        self.started: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.returncode: int | None = None
        self._buffer = bytearray()
        self._truncated = False
        self._eof = False
        self._tree_gone = False  # no process of the tree is left
        self.reaped = asyncio.Event()  # the process this client started has exited
        self._status = bytearray()
        self._drain_timeout = drain_timeout
        self._drain_timer: asyncio.TimerHandle | None = None
        self.quiet = asyncio.Event()  # the tree is gone and the output pipe closed
        self.finished = asyncio.Event()  # exited and output drained (or drain timeout)
        self.kill_lock = asyncio.Lock()

    # Called by the subprocess protocol.

    def on_data(self, data: bytes) -> None:
        if self.released:
            return  # still draining while it is killed; nobody can read it any more
        buffer = self._buffer
        before = len(buffer)
        buffer += data
        budget = self.budget
        # Over the terminal's own limit, or over the session's cap: drop this terminal's oldest.
        excess = max(len(buffer) - self.limit, budget.used - before + len(buffer) - budget.cap)
        if excess > 0:
            del buffer[:excess]
            # Do not start in the middle of a character: drop its remaining continuation bytes.
            skip = 0
            while skip < 3 and skip < len(buffer) and buffer[skip] & 0xC0 == 0x80:
                skip += 1
            del buffer[:skip]
            self._truncated = True
        budget.used += len(buffer) - before

    def forget_output(self) -> None:
        """Give the kept output back to the session's budget (the terminal is released)."""
        self.released = True
        self.budget.used -= len(self._buffer)
        self._buffer.clear()

    def on_eof(self) -> None:
        self._eof = True
        self._update()

    def on_exit(self, returncode: int | None) -> None:
        self.returncode = -signal.SIGKILL if returncode is None else returncode
        if not self.guarded:
            self._tree_gone = True  # as far as an unguarded terminal can tell
        if not self._eof:
            loop = asyncio.get_running_loop()
            self._drain_timer = loop.call_later(self._drain_timeout, self.finished.set)
        self._update()

    def on_status(self, data: bytes) -> None:
        """Lines from the guard (see ``_supervisor.py``): ``pid``, ``error``, ``unsupported``, ``exit``."""
        self._status += data
        while (end := self._status.find(b"\n")) >= 0:
            line = bytes(self._status[:end])
            del self._status[: end + 1]
            word, _, value = line.partition(b" ")
            if word == b"exit" and value.lstrip(b"-").isdigit():
                self.on_exit(int(value))
            elif word == b"pid" and value.isdigit():
                self.pid = int(value)
                self._start(int(value))
            elif word == b"error" and value.isdigit():  # as Popen raises it: FileNotFoundError...
                self._start(OSError(int(value), os.strerror(int(value))))
            elif word == b"unsupported" and value.isdigit():
                self._start(_NoGuard(f"no child subreaper: {os.strerror(int(value))}"))
            else:  # a traceback of a guard that crashed: nothing to act on, but worth seeing
                log.warning("terminal %s: its supervisor said %r", self.id, line)

    def on_reaped(self, returncode: int | None) -> None:
        self.reaped.set()
        if self.guarded:  # the guard reports the command's end on its status pipe
            self._update()
        else:
            self.on_exit(returncode)

    def on_guard_gone(self) -> None:
        """The guard's status pipe ended: it exited, after every process of its tree."""
        self._tree_gone = True
        self._start(_GuardFailed("it ended before starting the command"))
        if self.returncode is None and self.pid:
            # The guard was killed while the command ran: the tree is loose. Its group is
            # all that can still be reached.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            self.on_exit(None)
        self._update()

    def _start(self, outcome: int | BaseException) -> None:
        if self.started.done():
            return
        if isinstance(outcome, BaseException):
            self.started.set_exception(outcome)
        else:
            self.started.set_result(outcome)

    def _update(self) -> None:
        if self.returncode is not None and self._eof:
            if self._drain_timer is not None:
                self._drain_timer.cancel()
                self._drain_timer = None
            self.finished.set()
        if self._tree_gone and self._eof and self.reaped.is_set():
            self.quiet.set()

    # Queries.

    @property
    def exit_status(self) -> ExitStatus | None:
        if not self.finished.is_set() or self.returncode is None:
            return None
        return _exit_status(self.returncode)

    def snapshot(self) -> TerminalOutput:
        data = bytes(self._buffer)
        if not self._eof:
            data = data[: _complete_prefix_length(data)]
        return TerminalOutput(
            output=data.decode("utf-8", errors="replace"),
            truncated=self._truncated,
            exit_status=self.exit_status,
        )

    # Control.

    def signal_tree(self, sig: signal.Signals) -> None:
        """SIGTERM to the whole tree, or SIGKILL to it (a guarded one then also ends its guard)."""
        if self.quiet.is_set():
            return  # the command and everything holding its output are gone
        if not self.guarded:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, sig)
        elif self.control is not None and not self.control.is_closing():
            self.control.write(b"t" if sig == signal.SIGTERM else b"k")

    async def kill(self, grace: float) -> None:
        async with self.kill_lock:
            if self.quiet.is_set():
                return
            self.signal_tree(signal.SIGTERM)
            if await _wait_event(self.quiet, grace):
                return
            self.signal_tree(signal.SIGKILL)
            # A guarded tree is gone once its guard is; of an unguarded one, only the group.
            await _wait_event(self.quiet if self.guarded else self.finished, _SIGKILL_WAIT)

    async def close(self, grace: float) -> None:
        try:
            await self.kill(grace)
        finally:
            if self.transport is not None:
                self.transport.close()
            if self._drain_timer is not None and self.returncode is not None:
                self._drain_timer.cancel()
                self._drain_timer = None
                self.finished.set()


async def _wait_event(event: asyncio.Event, timeout: float) -> bool:
    try:
        await within(event.wait(), timeout)
    except asyncio.TimeoutError:
        return False
    return True


class _Protocol(asyncio.SubprocessProtocol):
    def __init__(self, terminal: _Terminal) -> None:
        self._terminal = terminal
        self._transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self._transport = transport

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        data = data.encode() if isinstance(data, str) else data
        if fd == 1:
            self._terminal.on_data(data)
        elif fd == 2:  # only a guard has a standard error of its own
            self._terminal.on_status(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self._terminal.on_eof()
        elif fd == 2:
            self._terminal.on_guard_gone()

    def process_exited(self) -> None:
        assert self._transport is not None
        self._terminal.on_reaped(self._transport.get_returncode())


class TerminalManager(AcloseOnExit):
    """Runs the commands of ``terminal/create`` and answers the other ``terminal/*`` calls.

    Use it as an async context manager, or call :meth:`aclose`, so that no command
    outlives the client.
    """

    def __init__(
        self,
        *,
        kill_grace: float = 2.0,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        exit_drain_timeout: float = 0.5,
        inherit_env: Collection[str] = DEFAULT_INHERITED_ENV,
        max_terminals_per_session: int = DEFAULT_MAX_TERMINALS_PER_SESSION,
        max_session_output_bytes: int = DEFAULT_MAX_SESSION_OUTPUT_BYTES,
    ) -> None:
        if min(kill_grace, exit_drain_timeout, max_output_bytes, max_session_output_bytes) < 0:
            raise ValueError(
                "kill_grace, exit_drain_timeout, max_output_bytes and "
                "max_session_output_bytes must not be negative"
            )
        if max_terminals_per_session < 1:
            raise ValueError("max_terminals_per_session must be at least 1")
        if isinstance(inherit_env, str):
            raise TypeError("inherit_env is a collection of names or patterns, not one string")
        self._kill_grace = kill_grace
        self._max_output_bytes = max_output_bytes
        self._drain_timeout = exit_drain_timeout
        self._inherit_env = tuple(inherit_env)
        self._max_terminals = max_terminals_per_session
        self._max_session_output = max_session_output_bytes
        self._budgets: dict[str, _Budget] = {}
        self._terminals: dict[str, _Terminal] = {}
        self._closing = TaskSet(log)
        """Terminals being killed and reaped: waited for, never cancelled."""
        self._closed = False
        self._guard = _supervisor_command()

    def terminal_ids(self, session_id: str) -> list[str]:
        """The live (not yet released) terminal ids of ``session_id``."""
        return [t.id for t in self._terminals.values() if t.session_id == session_id]

    async def create(
        self,
        session_id: str,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> str:
        """Start ``command`` and return its new terminal id without waiting for it."""
        if self._closed:
            raise InternalError("terminal manager is shut down")
        _check_arguments(command, args, cwd, output_byte_limit)
        child_env = _build_env(self._inherit_env, env)
        budget = self._check_room(session_id)
        if cwd is not None and not await asyncio.to_thread(os.path.isdir, cwd):
            raise InvalidParams(
                "cwd is not an existing directory", {"cwd": cwd, "reason": "cwd_not_found"}
            )
        limit = self._max_output_bytes
        if output_byte_limit is not None:
            limit = min(limit, output_byte_limit)
        terminal_id = f"term_{uuid.uuid4().hex}"
        while terminal_id in self._terminals:  # pragma: no cover - 128 random bits
            terminal_id = f"term_{uuid.uuid4().hex}"

        def make(guarded: bool) -> _Terminal:
            return _Terminal(
                terminal_id, session_id, limit, self._drain_timeout, budget, guarded=guarded
            )

        try:
            terminal = await self._start(make, command, args, child_env, cwd)
        except FileNotFoundError:
            raise InvalidParams(
                f"command not found: {command}", {"command": command, "reason": "command_not_found"}
            ) from None
        except PermissionError:
            raise InvalidParams(
                f"command is not executable: {command}",
                {"command": command, "reason": "not_executable"},
            ) from None
        except OSError as exc:
            name = errno.errorcode.get(exc.errno, "unknown") if exc.errno is not None else "unknown"
            raise InternalError(
                f"could not start command: {command}", {"command": command, "errno": name}
            ) from None
        except _GuardFailed as exc:
            log.warning("terminal supervisor failed: %s", exc)
            raise InternalError(
                f"could not start command: {command}",
                {"command": command, "reason": "supervisor_failed"},
            ) from None
        if self._closed:  # aclose() ran while we were starting it
            await self._shutdown(terminal)
            raise InternalError("terminal manager is shut down")
        if len(self.terminal_ids(session_id)) >= self._max_terminals:  # others started meanwhile
            await self._shutdown(terminal)
            self._check_room(session_id)
        self._terminals[terminal_id] = terminal
        return terminal_id

    async def _start(
        self,
        make: Callable[[bool], _Terminal],
        command: str,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
    ) -> _Terminal:
        """Start the command under a guard where one can run, else as a plain child."""
        if self._guard is not None:
            terminal = make(True)
            try:
                await self._start_guarded(terminal, self._guard, command, args, env, cwd)
                return terminal
            except _NoGuard as refused:
                log.warning(
                    "terminals run without their supervisor from now on (%s): releasing a "
                    "terminal kills its process group only",
                    refused,
                )
                self._guard = None
        terminal = make(False)
        await self._start_unguarded(terminal, command, args, env, cwd)
        return terminal

    async def _start_guarded(
        self,
        terminal: _Terminal,
        guard: Sequence[str],
        command: str,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
    ) -> None:
        """Start the guard (``_supervisor.py``), hand it the command, wait until it runs.

        The guard gets the client's own environment, not the command's: it is the same
        interpreter as the client and needs what the client needed to start (``-I`` makes it
        ignore ``PYTHON*`` variables). The command gets ``env`` only.
        """
        spec = _encode_spec(command, args, env)
        loop = asyncio.get_running_loop()
        transport, _ = await loop.subprocess_exec(
            lambda: _Protocol(terminal),
            *guard,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            start_new_session=True,
        )
        terminal.transport = transport
        control = transport.get_pipe_transport(0)
        assert isinstance(control, asyncio.WriteTransport)
        terminal.control = control
        control.write(spec)
        try:
            await within(terminal.started, _GUARD_START_TIMEOUT)
        except asyncio.TimeoutError:
            transport.close()  # its input ends and its parent is killed: it stops
            raise _GuardFailed(
                f"it did not start the command within {_GUARD_START_TIMEOUT:g} s"
            ) from None
        except asyncio.CancelledError:
            transport.close()  # its input ends: the guard kills whatever it started
            raise
        except Exception:
            await _wait_event(terminal.reaped, _SIGKILL_WAIT)  # it ends after reporting
            transport.close()
            raise

    async def _start_unguarded(
        self,
        terminal: _Terminal,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str],
        cwd: str | None,
    ) -> None:
        """Start the command as this process's child, leading its own session and group."""
        loop = asyncio.get_running_loop()
        transport, _ = await loop.subprocess_exec(
            lambda: _Protocol(terminal),
            command,
            *args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        terminal.transport = transport
        terminal.pid = transport.get_pid()

    def _check_room(self, session_id: str) -> _Budget:
        """The session's output budget, once it has room for one more terminal."""
        held = len(self.terminal_ids(session_id))
        if held >= self._max_terminals:
            raise InvalidParams(
                f"this session already holds {held} terminals (at most {self._max_terminals}); "
                "release some first",
                {"reason": "too_many_terminals", "max": self._max_terminals},
            )
        budget = self._budgets.get(session_id)
        if budget is None:
            budget = self._budgets[session_id] = _Budget(self._max_session_output)
        if budget.used >= budget.cap and budget.cap > 0:
            raise InvalidParams(
                f"the terminals of this session keep {budget.used} bytes of output, the most "
                "this client keeps; release some first",
                {"reason": "output_budget_exhausted", "maxBytes": budget.cap},
            )
        return budget

    async def output(self, session_id: str, terminal_id: str) -> TerminalOutput:
        """The output kept so far, whether some was dropped, and the exit status once exited."""
        return self._get(session_id, terminal_id).snapshot()

    async def wait_for_exit(self, session_id: str, terminal_id: str) -> ExitStatus:
        """Wait until the command has exited and return how it ended."""
        terminal = self._get(session_id, terminal_id)
        await terminal.finished.wait()
        status = terminal.exit_status
        assert status is not None
        return status

    async def kill(self, session_id: str, terminal_id: str) -> None:
        """Stop the command (SIGTERM, then SIGKILL); the terminal stays valid."""
        await self._get(session_id, terminal_id).kill(self._kill_grace)

    async def release(self, session_id: str, terminal_id: str) -> None:
        """Kill the command if it still runs and forget the terminal; its id becomes invalid."""
        terminal = self._get(session_id, terminal_id)
        del self._terminals[terminal_id]
        await self._shutdown(terminal)

    async def release_session(self, session_id: str) -> None:
        """Release every terminal of ``session_id`` (e.g. when the session ends)."""
        terminals = [t for t in self._terminals.values() if t.session_id == session_id]
        for terminal in terminals:
            del self._terminals[terminal.id]
        self._budgets.pop(session_id, None)
        await asyncio.gather(*(self._shutdown(t) for t in terminals))

    async def aclose(self) -> None:
        """Release every terminal and refuse new ones; no command is left running."""
        self._closed = True
        terminals = list(self._terminals.values())
        self._terminals.clear()
        self._budgets.clear()
        await asyncio.gather(*(self._shutdown(t) for t in terminals))
        await self._closing.wait()

    def _get(self, session_id: str, terminal_id: str) -> _Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None or terminal.session_id != session_id:
            raise ResourceNotFound("unknown terminal", {"terminalId": terminal_id})
        return terminal

    async def _shutdown(self, terminal: _Terminal) -> None:
        terminal.forget_output()
        # Shielded so that a cancelled release still kills and reaps the process.
        task = self._closing.spawn(
            terminal.close(self._kill_grace), name=f"close terminal {terminal.id}"
        )
        await asyncio.shield(task)


def _supervisor_command() -> list[str] | None:
    """How to start a terminal's guard; ``None`` where terminals have their process group only."""
    if (
        not sys.platform.startswith("linux")
        or not sys.executable
        or getattr(sys, "frozen", False)  # sys.executable is the application, not a Python
        or not _SUPERVISOR.is_file()
    ):
        return None
    return [sys.executable, "-I", "-S", str(_SUPERVISOR)]


class _NoGuard(Exception):
    """The kernel or the interpreter cannot guard a tree here; nothing was started."""


class _GuardFailed(Exception):
    """The guard did not start the command (it ended, or did not answer); nothing runs."""


def _encode_spec(command: str, args: Sequence[str], env: Mapping[str, str]) -> bytes:
    """The command and its environment as the guard reads them (see ``_supervisor.py``)."""
    try:
        fields = [
            b"%d" % (len(args) + 1),
            os.fsencode(command),
            *(os.fsencode(arg) for arg in args),
            *(os.fsencode(f"{name}={value}") for name, value in env.items()),
        ]
    except UnicodeEncodeError:
        raise InvalidParams(
            "command, arguments and environment must be encodable text",
            {"reason": "invalid_args"},
        ) from None
    payload = b"\0".join(fields)
    return b"%d\n" % len(payload) + payload


def _build_env(inherit: Sequence[str], env: Mapping[str, str] | None) -> dict[str, str]:
    """The client's variables whose names match ``inherit``, with the agent's ``env`` over them."""
    merged = {
        name: value
        for name, value in os.environ.items()
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in inherit)
    }
    if env:
        for name, value in env.items():
            if not name or "=" in name or "\x00" in name:
                raise InvalidParams(
                    "invalid environment variable name", {"name": name, "reason": "invalid_env"}
                )
            if "\x00" in value:
                raise InvalidParams(
                    "environment variable value contains a NUL character",
                    {"name": name, "reason": "invalid_env"},
                )
            merged[name] = value
    return merged


def _check_arguments(
    command: str, args: Sequence[str], cwd: str | None, output_byte_limit: int | None
) -> None:
    if not command or "\x00" in command:
        raise InvalidParams("command must be a non-empty string", {"reason": "invalid_command"})
    if any("\x00" in arg for arg in args):
        raise InvalidParams("arguments must not contain NUL characters", {"reason": "invalid_args"})
    if output_byte_limit is not None and output_byte_limit < 0:
        raise InvalidParams(
            "outputByteLimit must not be negative",
            {"outputByteLimit": output_byte_limit, "reason": "invalid_limit"},
        )
    if cwd is not None and ("\x00" in cwd or not os.path.isabs(cwd)):
        raise InvalidParams("cwd must be an absolute path", {"cwd": cwd, "reason": "relative_cwd"})
