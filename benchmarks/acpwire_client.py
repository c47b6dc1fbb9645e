"""acpwire benchmark client driver: :class:`acpwire.client.connection.Client` over
:func:`acpwire.transports.spawn`, the way an editor integration would use it.

Every ``session/update`` is decoded into the typed models by the engine and
handed to :meth:`BenchClient.session_update`, which counts it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from _scenario import CWD, DriverBase

from acpwire import schema as s
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.transports import spawn

AGENT = Path(__file__).resolve().parent / "acpwire_agent.py"


class BenchClient(Client):
    def __init__(self, driver: DriverBase) -> None:
        self.driver = driver

    async def session_update(self, params: s.SessionNotification) -> None:
        self.driver.on_update()


class AcpwireDriver(DriverBase):
    """``script args`` (default: the low-tier agent) served to a :class:`BenchClient`,
    or to what ``client(driver)`` makes (a client that calls ``driver.on_update()``)."""

    def __init__(
        self,
        python: str = sys.executable,
        python_args: Sequence[str] = (),
        *,
        script: Path = AGENT,
        args: Sequence[str] = (),
        client: Callable[[DriverBase], Client] = BenchClient,
    ) -> None:
        super().__init__()
        self.python = python
        # e.g. ["-m", "cProfile", "-o", FILE] to profile the agent
        self.python_args = list(python_args)
        self.script, self.args, self.client = script, list(args), client
        self.conn: ClientSideConnection | None = None
        self._pid: int | None = None

    def agent_pid(self) -> int | None:
        return self._pid

    async def start(self) -> None:
        transport = await spawn(self.python, [*self.python_args, str(self.script), *self.args])
        self._pid = transport.pid
        self.conn = ClientSideConnection(self.client(self), transport)

    async def initialize(self) -> None:
        assert self.conn is not None
        await self.conn.initialize()

    async def new_session(self) -> str:
        assert self.conn is not None
        return (await self.conn.agent.new_session(CWD)).session_id

    async def prompt(self, session_id: str, text: str) -> None:
        assert self.conn is not None
        await self.conn.agent.prompt(session_id, text)

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
