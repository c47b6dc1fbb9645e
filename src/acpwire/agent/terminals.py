"""Running commands in the client's terminals (terminals.mdx), with a local fallback.

A :class:`TerminalHandle` wraps one client terminal id. Used as an async
context manager it always releases the terminal (TERM-004), also after a kill
(TERM-005) and when the turn is cancelled; cleanup calls are bounded by
:data:`CLEANUP_TIMEOUT` so a silent client cannot hold the turn open.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal as _signal
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass

from .. import schema as s
from .._closing import AcloseOnExit
from .._waits import within
from ..protocol.errors import ConnectionClosedError, RequestError
from ..schema import unset_to_none
from .v1 import ClientPeer

__all__ = ["CLEANUP_TIMEOUT", "RunResult", "TerminalHandle", "run_locally"]

CLEANUP_TIMEOUT = 5.0
"""Seconds each kill/release may take during teardown before it is abandoned."""


@dataclass(frozen=True)
class RunResult:
    """What a command printed and how it ended."""

    output: str
    exit_code: int | None
    signal: str | None = None
    truncated: bool = False
    terminal_id: str | None = None
    """The client terminal it ran in (already released), or None when it ran locally."""
    error: str | None = None
    """Why the command could not run (its tool call failed); None when it ran."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


class TerminalHandle(AcloseOnExit):
    """One client terminal: output, wait, kill, release.

    ``held`` is the set of terminals its turn still holds (and releases when it ends):
    the handle is in it until released.
    """

    def __init__(
        self,
        client: ClientPeer,
        session_id: str,
        terminal_id: str,
        *,
        held: set[TerminalHandle] | None = None,
    ) -> None:
        self.client = client
        self.session_id = session_id
        self.id = terminal_id
        self._held = held
        if held is not None:
            held.add(self)
        self.released = False
        self.exit_code: int | None = None
        self.signal: str | None = None
        self.exited = False

    async def output(self) -> s.TerminalOutputResponse:
        """``terminal/output``: the output so far, and the exit status once it exited."""
        return await self.client.terminal_output(self.session_id, self.id)

    async def wait(self) -> s.WaitForTerminalExitResponse:
        """``terminal/wait_for_exit``."""
        result = await self.client.wait_for_terminal_exit(self.session_id, self.id)
        code, sig = unset_to_none(result.exit_code), unset_to_none(result.signal)
        self.exit_code = code if isinstance(code, int) else None
        self.signal = sig if isinstance(sig, str) else None
        self.exited = True
        return result

    async def kill(self) -> None:
        """``terminal/kill``: stop the command; the terminal stays valid until released."""
        await self.client.kill_terminal(self.session_id, self.id)

    async def release(self) -> None:
        """``terminal/release`` (kills the command if still running). Idempotent."""
        if self.released:
            return
        self._let_go()
        await self.client.release_terminal(self.session_id, self.id)

    async def close(self) -> None:
        """Kill if still running, then release; errors and slowness are tolerated (teardown)."""
        if self.released:
            return
        if not self.exited:
            await _bounded(self.kill())
        await _bounded(self.release())
        self._let_go()

    aclose = close
    """The same as :meth:`close`, which ``async with`` calls (docs/concepts/closing.md)."""

    def _let_go(self) -> None:
        self.released = True
        if self._held is not None:
            self._held.discard(self)


async def _bounded(coro: Awaitable[object]) -> None:
    with contextlib.suppress(asyncio.TimeoutError, RequestError, ConnectionClosedError, OSError):
        await within(coro, CLEANUP_TIMEOUT)


async def run_locally(
    command: str,
    args: Sequence[str] = (),
    *,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    output_byte_limit: int | None = None,
) -> RunResult:
    """Run a command on the agent's machine (the fallback when the client has no terminals).

    Output is stdout and stderr interleaved; when over ``output_byte_limit``
    the beginning is dropped at a character boundary (TERM-003). Cancelling
    kills the process.
    """
    import os

    full_env = None if env is None else {**os.environ, **env}
    proc = await asyncio.create_subprocess_exec(
        command,
        *args,
        cwd=cwd,
        env=full_env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        data, _ = await proc.communicate()
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(Exception):
            await within(proc.wait(), CLEANUP_TIMEOUT)
        raise
    truncated = False
    if output_byte_limit is not None and len(data) > output_byte_limit:
        data = data[len(data) - output_byte_limit :]
        while data and data[0] & 0xC0 == 0x80:  # do not start inside a UTF-8 sequence
            data = data[1:]
        truncated = True
    code = proc.returncode
    sig: str | None = None
    if code is not None and code < 0:
        try:
            sig = _signal.Signals(-code).name
        except ValueError:
            sig = f"SIG{-code}"
        code = None
    return RunResult(data.decode("utf-8", "replace"), code, sig, truncated)
