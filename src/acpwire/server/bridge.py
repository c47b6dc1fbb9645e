"""The stdio->remote bridge: each remote connection gets its own agent process.

:class:`StdioBridge` is what ``acp serve -- AGENT ARGS...`` hosts. It spawns
the agent with :func:`~acpwire.transports.subprocess.spawn` and copies whole
messages both ways without decoding them; when either side ends, the other is
closed (the agent is stopped the polite way first, then terminated, then
killed; cancelling the bridge still waits for that bounded sequence, so no
agent process outlives its connection). What the agent prints that is not
JSON-RPC is dropped by the endpoint (:mod:`.connection`), never forwarded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping, Sequence

from ..protocol.framing import Oversize
from ..transports.base import Transport
from ..transports.subprocess import SubprocessTransport, spawn

log = logging.getLogger("acpwire.server")


async def copy_messages(source: Transport, target: Transport, what: str) -> None:
    """Forward whole messages from ``source`` to ``target`` until ``source`` ends;
    an oversize one is dropped and logged (``what`` says which direction)."""
    while True:
        message = await source.receive()
        if message is None:
            return
        if isinstance(message, Oversize):
            log.warning("dropped an oversize message (%d bytes) %s", message.size, what)
            continue
        await target.send(message)


async def _stop(agent: SubprocessTransport) -> None:
    """Stop the agent process, even when the bridge is being cancelled.

    The close is bounded (stdin drain, EOF, SIGTERM, SIGKILL), so it is awaited
    to the end: abandoning it half way would leave the process running.
    """
    closing = asyncio.ensure_future(agent.close())
    try:
        await asyncio.shield(closing)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await closing
        raise
    except Exception:
        log.exception("stopping the agent failed")


class StdioBridge:
    """Serves a remote connection by a freshly spawned stdio agent."""

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        grace_period: float = 2.0,
    ) -> None:
        self.command = command
        self.args = list(args)
        self.env = env
        self.cwd = cwd
        self.grace_period = grace_period
        self.pids: list[int] = []
        """Process ids of every agent started so far (for logs and tests)."""

    async def serve(self, transport: Transport) -> None:
        """Spawn the agent and copy messages until either side ends."""
        agent = await spawn(
            self.command,
            self.args,
            env=self.env,
            cwd=self.cwd,
            grace_period=self.grace_period,
            on_stderr=lambda line: log.info("agent: %s", line),
        )
        self.pids.append(agent.pid)
        up = asyncio.ensure_future(copy_messages(transport, agent, "from the client"))
        down = asyncio.ensure_future(copy_messages(agent, transport, "from the agent"))
        try:
            await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            up.cancel()
            down.cancel()
            for task in (up, down):
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await task
            await _stop(agent)
            await transport.close()
