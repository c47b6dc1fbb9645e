"""Spawn an ACP agent as a child process and talk to it over its stdin/stdout.

The agent's stderr is read continuously (so it can never block on a full
pipe), kept as a bounded tail for error messages, and handed line by line to
an optional callback. :meth:`SubprocessTransport.close` stops the agent the
polite way first: close its stdin, wait, then terminate its process group,
then kill it, so no orphan is left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections import deque
from collections.abc import Callable, Mapping, Sequence

from ..protocol.errors import ConnectionClosedError
from ..protocol.framing import DEFAULT_MAX_MESSAGE_SIZE, Oversize
from .streams import StreamTransport

DRAIN_TIMEOUT = 1.0
"""Seconds :meth:`SubprocessTransport.close` waits for the agent to take what is
still buffered for its stdin: one that reads normally needs far less, one that
stopped reading never will."""


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
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._stream = StreamTransport(
            process.stdout, process.stdin, max_message_size=max_message_size
        )
        self._stderr_tail: deque[str] = deque(maxlen=stderr_tail_lines)
        self._on_stderr = on_stderr
        self._grace = grace_period
        self._closed = False
        self._stderr_task = asyncio.ensure_future(self._pump_stderr()) if process.stderr else None

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def stderr_tail(self) -> str:
        """The last lines the agent wrote to stderr."""
        return "\n".join(self._stderr_tail)

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

    async def send(self, message: bytes) -> None:
        try:
            await self._stream.send(message)
        except ConnectionClosedError:
            raise
        except (ConnectionError, OSError) as exc:
            raise ConnectionClosedError(f"agent stopped reading: {exc}", broken=True) from exc

    async def receive(self) -> bytes | Oversize | None:
        return await self._stream.receive()

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
            await asyncio.wait_for(self._stream.close(), min(self._grace, DRAIN_TIMEOUT))
        except Exception:
            reading = False
            if proc.stdin is not None:  # drop what it will never read
                proc.stdin.transport.abort()
        if proc.returncode is None and reading:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(proc.wait(), self._grace)
        if proc.returncode is None:
            self._signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(proc.wait(), self._grace)
            except asyncio.TimeoutError:
                self._signal(signal.SIGKILL)
                await proc.wait()
        # Children the agent left in its process group go too.
        self._signal(signal.SIGKILL)
        if self._stderr_task is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._stderr_task, 1.0)

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)


async def spawn(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    on_stderr: Callable[[str], None] | None = None,
    grace_period: float = 2.0,
) -> SubprocessTransport:
    """Start ``command args...`` with piped stdio; ``env`` is merged over this process's."""
    resolved = shutil.which(command) if os.sep not in command else command
    if resolved is None:
        raise AgentNotFoundError(f"agent command not found: {command!r}")
    full_env = None if env is None else {**os.environ, **env}
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
            limit=2**31 - 1,
        )
    except (FileNotFoundError, PermissionError) as exc:
        raise AgentNotFoundError(f"cannot start agent {command!r}: {exc.strerror or exc}") from exc
    return SubprocessTransport(
        process, max_message_size=max_message_size, on_stderr=on_stderr, grace_period=grace_period
    )
