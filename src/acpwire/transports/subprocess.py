"""Spawn an ACP agent as a child process and talk to it over its stdin/stdout.

The agent's stderr is read continuously (so it can never block on a full
pipe), kept as a bounded tail for error messages, and handed line by line to
an optional callback. :meth:`SubprocessTransport.close` stops the agent the
polite way first: close its stdin, wait, then terminate its process group,
then kill it, so no orphan is left behind.

**Exit detection.** The agent's exit ends the input even when its stdout stays
open: a grandchild that inherited the pipe would otherwise keep the client
waiting for an end of file that never comes. asyncio's ``Process.wait()``
cannot tell (from Python 3.11 it also waits for every pipe to close), so the
exit status is polled every ``EXIT_POLL_INTERVAL`` seconds; once it is known,
the output still in flight gets ``EXIT_DRAIN`` seconds, then :meth:`receive`
reports the end of input. :attr:`SubprocessTransport.returncode` says how the
agent ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import signal
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from .._waits import within
from ..protocol.errors import ConnectionClosedError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE, Oversize
from .pipes import read_heap_sized, widen_pipe
from .streams import READ_LIMIT, StreamTransport

DRAIN_TIMEOUT = 1.0
"""Seconds :meth:`SubprocessTransport.close` waits for the agent to take what is
still buffered for its stdin: one that reads normally needs far less, one that
stopped reading never will."""
EXIT_POLL_INTERVAL = 0.1
"""Seconds between checks of the agent's exit status (see the module docstring)."""
EXIT_DRAIN = 0.25
"""Seconds the output an exited agent wrote may take to arrive before input ends."""
START_RETRIES = (0.05, 0.1, 0.2, 0.4, 0.8)
"""Pauses between attempts when starting the agent fails for a passing reason
(:data:`PASSING_START_ERRORS`): about 1.5 s in all, then the error stands."""
PASSING_START_ERRORS = frozenset({errno.ETXTBSY, errno.EAGAIN, errno.ENOMEM, errno.EINTR})
"""``exec`` failures that a moment later may not recur: the program file is still held
open for writing (by whoever just wrote it, or by a child forked meanwhile that has
not reached its own ``exec``), or the system is briefly out of processes or memory."""


class AgentNotFoundError(FileNotFoundError):
    """The agent command could not be found or started."""


class SubprocessTransport:
    """A :class:`~acpwire.transports.base.Transport` to a child process."""

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        on_stderr: Callable[[str], None] | None = None,
        stderr_tail_lines: int = 200,
        grace_period: float = 2.0,
        on_stray_output: Callable[[str], None] | None = None,
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._stream = StreamTransport(
            process.stdout, process.stdin, max_message_size=max_message_size
        )
        self._stderr_tail: deque[str] = deque(maxlen=stderr_tail_lines)
        self._on_stderr = on_stderr
        self.grace_period = grace_period
        """Seconds :meth:`close` waits after closing stdin, and again after SIGTERM."""
        self._on_stray_output = on_stray_output
        self._closed = False
        self._stderr_task = asyncio.ensure_future(self._pump_stderr()) if process.stderr else None
        self._exit_task = asyncio.ensure_future(self._end_input_on_exit())
        if on_stray_output is None:  # nothing to filter: the stream's own, one frame less
            self.receive = self._stream.receive  # type: ignore[method-assign]
            self.take_ready = self._stream.take_ready

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def stderr_tail(self) -> str:
        """The last lines the agent wrote to stderr."""
        return "\n".join(self._stderr_tail)

    def ended(self, during: str, *, lines: int = 20) -> str:
        """How the agent ended ``during`` something, with its last stderr lines: the
        message of an error about it (call once it has exited, e.g. after :meth:`close`)."""
        code = self.returncode
        how = "closed its output" if code is None else f"exited with code {code}"
        tail = "\n".join(self.stderr_tail().splitlines()[-lines:])
        return f"{how} during {during}" + (
            f"; last stderr lines:\n{tail}" if tail else " (no stderr output)"
        )

    async def _pump_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while True:
            try:
                line = await stream.readline()
            except (ValueError, asyncio.LimitOverrunError):
                continue
            except (ConnectionError, OSError):
                return
            if not line:
                return
            text = line.decode("utf-8", "replace").rstrip("\n")
            self._stderr_tail.append(text)
            if self._on_stderr is not None:
                with contextlib.suppress(Exception):
                    self._on_stderr(text)

    async def _wait_exit(self, timeout: float | None = None) -> bool:
        """Whether the agent exited within ``timeout`` seconds (``None``: no limit)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while self.process.returncode is None:
            if deadline is not None and loop.time() >= deadline:
                return False
            await asyncio.sleep(EXIT_POLL_INTERVAL)
        return True

    async def _end_input_on_exit(self) -> None:
        await self._wait_exit()
        reader = self.process.stdout
        if reader is None or reader.at_eof():
            return
        await asyncio.sleep(EXIT_DRAIN)
        if not reader.at_eof():
            reader.feed_eof()  # the pipe is still held open by something the agent left behind

    async def send(self, message: bytes) -> None:
        try:
            await self._stream.send(message)
        except ConnectionClosedError:
            raise
        except (ConnectionError, OSError) as exc:
            raise ConnectionClosedError(f"agent stopped reading: {exc}", broken=True) from exc

    async def receive(self) -> bytes | Oversize | None:
        """The next message; with ``on_stray_output``, lines that are not JSON go there instead.

        Some agents print to stdout outside the protocol (gemini-cli's login prompt and
        URL): such a line cannot be a JSON-RPC message, and the user may need to read it.
        """
        while True:
            message = await self._stream.receive()
            if (
                self._on_stray_output is None
                or not isinstance(message, bytes)
                or message[:1] == b"{"
                or message.lstrip()[:1] in (b"{", b"[")
            ):
                return message
            with contextlib.suppress(Exception):
                self._on_stray_output(message.decode("utf-8", "replace").rstrip("\r"))

    async def close(self) -> None:
        """Close stdin (waiting at most :data:`DRAIN_TIMEOUT` for it to drain), give the
        agent ``grace_period`` to exit, then terminate, ``grace_period`` again, then kill.

        An agent whose stdin did not drain is not reading it and will not see the end
        of input either: it is terminated at once."""
        if self._closed:
            return
        self._closed = True
        proc = self.process
        reading = True
        try:
            await within(self._stream.close(), min(self.grace_period, DRAIN_TIMEOUT))
        except Exception:
            reading = False
            if proc.stdin is not None:  # drop what it will never read
                proc.stdin.transport.abort()
        # An agent that is not reading will not see the end of input: terminate it at once.
        if not reading or not await self._wait_exit(self.grace_period):
            self._signal(signal.SIGTERM)
            if not await self._wait_exit(self.grace_period):
                self._signal(signal.SIGKILL)
                await self._wait_exit(self.grace_period)
        # Children the agent left in its process group go too.
        self._signal(signal.SIGKILL)
        self._exit_task.cancel()
        # Our end of a pipe a child outside the group may still hold: asyncio closes it
        # only once both ends are done, so close it here (no public API for that).
        pipes = getattr(proc, "_transport", None)
        if pipes is not None:
            with contextlib.suppress(Exception):
                pipes.close()
        if self._stderr_task is not None:
            # The last of its stderr, for at most 1 s; a cancellation of close() itself
            # still propagates (a suppressed wait_for would swallow it).
            try:
                await asyncio.wait({self._stderr_task}, timeout=1.0)
            finally:
                self._stderr_task.cancel()

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)


def _tune_stdout(process: asyncio.subprocess.Process) -> None:
    """Widen the pipe the agent streams its updates through and read it in heap-sized
    chunks (pipes.py), whatever the agent is; an acpwire agent widens it from its side
    as well. asyncio has no public way to the pipe, hence the guarded private attribute."""
    with contextlib.suppress(Exception):
        transport: Any = vars(process)["_transport"]
        pipe = cast("asyncio.ReadTransport", transport.get_pipe_transport(1))
        read_heap_sized(pipe)
        widen_pipe(pipe.get_extra_info("pipe").fileno())


def _why(exc: OSError) -> str:
    name = errno.errorcode.get(exc.errno or 0)
    return f"{exc.strerror} ({name})" if exc.strerror and name else str(exc)


async def spawn(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    on_stderr: Callable[[str], None] | None = None,
    grace_period: float = 2.0,
    on_stray_output: Callable[[str], None] | None = None,
) -> SubprocessTransport:
    """Start ``command args...`` with piped stdio; ``env`` is merged over this process's.

    ``on_stderr`` gets each stderr line, ``on_stray_output`` each stdout line that is
    not JSON (see :meth:`SubprocessTransport.receive`). A command given as a relative
    path (``./agent.py``) is found from this process's working directory, as a shell
    would, not from ``cwd`` (which is where the agent then runs).
    """
    # abspath only joins strings with getcwd(): no blocking I/O.
    resolved = shutil.which(command) if os.sep not in command else os.path.abspath(command)  # noqa: ASYNC240
    if resolved is None:
        raise AgentNotFoundError(f"agent command not found: {command!r}")
    full_env = None if env is None else {**os.environ, **env}
    pauses = iter(START_RETRIES)
    while True:
        try:
            process = await asyncio.create_subprocess_exec(
                resolved,
                *args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=full_env,
                cwd=cwd,
                start_new_session=True,
                limit=READ_LIMIT,  # stdout and stderr (a longer stderr line is skipped)
            )
            break
        except OSError as exc:
            pause = next(pauses, None) if exc.errno in PASSING_START_ERRORS else None
            if pause is None and cwd is not None and not os.path.isdir(cwd):  # noqa: ASYNC240
                # exec reports a missing cwd as the program's ENOENT: name the folder.
                raise AgentNotFoundError(
                    f"cannot start agent {command!r}: its working directory "
                    f"{os.fspath(cwd)!r} does not exist or is not a folder"
                ) from exc
            if pause is None:
                raise AgentNotFoundError(f"cannot start agent {command!r}: {_why(exc)}") from exc
            await asyncio.sleep(pause)
    _tune_stdout(process)
    return SubprocessTransport(
        process,
        max_message_size=max_message_size,
        on_stderr=on_stderr,
        grace_period=grace_period,
        on_stray_output=on_stray_output,
    )
