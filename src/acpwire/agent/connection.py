"""Serving an agent on a connection: v1, or v1 and the v2 draft with the version chosen
at ``initialize``.

This module sits above the two protocol versions of the low tier,
:mod:`acpwire.agent.v1` (:class:`Agent`, :class:`ClientPeer`) and
:mod:`acpwire.agent.v2` (:class:`~acpwire.agent.v2.AgentV2`); neither imports the
other, and the choice between them is made here and nowhere else.

The v2 draft is opt-in: ``AgentSideConnection(agent, transport, v2=agent_v2)``
(or ``serve_stdio(agent, v2=...)``, ``run_agent(agent, v2=...)``) serves a v1 client
with ``agent`` and a client asking for version 2 with the
:class:`~acpwire.agent.v2.AgentV2`, on one transport. Until ``initialize`` the
connection serves v1 routes with a negotiating ``initialize``; its answer picks
the version (:func:`~acpwire.protocol.version.select_version`) and swaps in that
version's routes for the rest of the connection (before the answer goes out, so the
client's next request meets them), retiring the other version's peer. The draft is
answered only to a client that asks for exactly 2; every other request gets 1, so a
v1 client that asks for a later version than it speaks still gets an answer it
reads. ``v2_default=True`` makes the draft the agent's default: requests above 2 get
2 too. Without ``v2`` nothing of this exists: the connection serves the v1 routes
alone, as it always did, and the v2 models are never loaded.

Interrupting a stdio agent: clients such as ``acpx exec`` leave the agent in
the terminal's process group, so Ctrl-C reaches the agent as SIGINT together
with ``session/cancel``. A stdio agent served by :func:`serve_stdio` (and so
:func:`run_agent` and ``AgentApp.run``) then does what ``session/cancel``
does for every prompt still running, gives their answers (``cancelled``) up
to :data:`INTERRUPT_GRACE` seconds to go out, closes the connection and
returns; the program exits 0. A second SIGINT stops at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from .. import schema as s
from ..engine.connection import Connection
from ..engine.roles import with_initialize
from ..protocol.errors import InvalidParams
from ..protocol.version import (
    PROTOCOL_VERSION,
    V2_DRAFT,
    requested_version,
    select_version,
    v2_initialize_params,
)
from ..transports.base import Transport
from .v1 import Agent, ClientPeer, McpListener, V1Layer

if TYPE_CHECKING:
    from .v2 import AgentV2, ClientPeerV2, V2Layer

__all__ = [
    "INTERRUPT_GRACE",
    "Agent",
    "AgentFactory",
    "AgentSideConnection",
    "ClientPeer",
    "McpListener",
    "run_agent",
    "serve_stdio",
    "serve_until_interrupted",
]

log = logging.getLogger("acpwire.agent")

INTERRUPT_GRACE = 5.0
"""Seconds the cancelled turns have, after an interrupt, to answer before the connection closes."""

AgentFactory = Callable[[], Agent]


class AgentSideConnection:
    """Serves an :class:`Agent` over a transport (and, given ``v2``, the v2 draft too)."""

    def __init__(
        self,
        agent: Agent,
        transport: Transport,
        *,
        check_capabilities: bool = True,
        v2: AgentV2 | None = None,
        v2_default: bool = False,
    ) -> None:
        if v2_default and v2 is None:
            raise ValueError("v2_default=True needs a v2 agent (v2=...) to answer in v2")
        self.agent = agent
        self.agent_v2 = v2
        self.v2_default = v2_default
        """Answer 2 to requests for versions above 2 as well (the author's explicit opt-in;
        otherwise only a request for exactly 2 gets the draft)."""
        self.version: int | None = None
        """The protocol version ``initialize`` chose (None before it)."""
        self.v1 = V1Layer(agent)
        """The v1 layer of this connection: its routes and client peer."""
        self.v2: V2Layer | None = None
        """The v2 layer of this connection (when ``v2`` is given): its routes and client peer."""
        router = self.v1.router
        if v2 is not None:
            from .v2 import V2Layer  # the v2 models load only for applications that opt in

            self.v2 = V2Layer(v2)
            router = with_initialize(router, self._negotiate)
        self.connection = Connection(transport, router, name="agent")
        self.client: ClientPeer = self.v1.attach(self.connection, check_capabilities)
        if self.v2 is not None:
            self.v2.attach(self.connection, check_capabilities)

    @property
    def client_v2(self) -> ClientPeerV2 | None:
        """The v2 client (when ``v2`` is given); usable once ``initialize`` chose v2."""
        return None if self.v2 is None else self.v2.client

    async def _negotiate(self, raw: Any) -> Any:
        """``initialize`` while the version is open: pick it, answer in it, swap routes."""
        assert self.v2 is not None
        requested = requested_version(raw)
        version = select_version(
            requested, (PROTOCOL_VERSION, V2_DRAFT), draft_default=self.v2_default
        )
        response: Any
        if version == V2_DRAFT:
            from ..schema import v2  # loaded already: the v2 layer uses it

            params = v2_initialize_params(raw, requested)
            response = await self.v2.initialize(_decode(params, v2.InitializeRequest))
        else:
            response = await self.v1.initialize(_decode(raw, s.InitializeRequest))
        self.chose(version)
        return response

    def chose(self, version: int) -> None:
        """``initialize`` chose ``version``: serve its routes from now on (the other
        version's peer is retired)."""
        self.version = version
        if self.v2 is None:
            return
        if version == V2_DRAFT:
            self.v1.client.retire(version)
            self.connection.use_router(self.v2.router)
        else:
            self.v2.client.retire(version)
            self.connection.use_router(self.v1.router)

    def start(self) -> None:
        self.connection.start()

    async def serve(self) -> None:
        """Serve until the client hangs up."""
        self.connection.start()
        try:
            await self.connection.wait_closed()
        finally:
            await self.connection.close()

    async def interrupt(self, grace: float = INTERRUPT_GRACE) -> None:
        """Stop serving in good order: cancel every running prompt as ``session/cancel``
        would, wait up to ``grace`` seconds for the requests in hand to be answered
        (prompts with ``cancelled``), then close."""
        layers: list[V1Layer | V2Layer] = [self.v1] if self.v2 is None else [self.v1, self.v2]
        for layer in layers:
            for session_id in layer.prompted():
                try:
                    await layer.cancel(session_id)
                except Exception:
                    log.exception("cancelling session %s on interrupt failed", session_id)
        await self.connection.drain(grace)
        await self.close()

    async def close(self) -> None:
        await self.connection.close()


def _decode(raw: Any, model: type[Any]) -> Any:
    try:
        return s.convert(raw, model)
    except msgspec.ValidationError as exc:
        raise InvalidParams("invalid initialize params", {"message": str(exc)}) from None


async def serve_until_interrupted(conn: AgentSideConnection) -> None:
    """:meth:`AgentSideConnection.serve`, but SIGINT calls :meth:`~AgentSideConnection.interrupt`.

    Where signal handlers cannot be installed (Windows, a thread other than the
    main one), this is plain ``serve()``.
    """
    loop = asyncio.get_running_loop()
    interrupted = asyncio.Event()
    try:
        loop.add_signal_handler(signal.SIGINT, interrupted.set)
    except (NotImplementedError, RuntimeError, ValueError):
        await conn.serve()
        return
    serving = asyncio.ensure_future(conn.serve())
    waiting = asyncio.ensure_future(interrupted.wait())
    try:
        await asyncio.wait({serving, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if interrupted.is_set():
            # From now on a second Ctrl-C raises KeyboardInterrupt: stop at once.
            loop.remove_signal_handler(signal.SIGINT)
            log.info("SIGINT: cancelling running turns, then exiting")
            await conn.interrupt()
        await serving
    finally:
        waiting.cancel()
        serving.cancel()
        with contextlib.suppress(RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGINT)


async def serve_stdio(
    agent: Agent, *, v2: AgentV2 | None = None, v2_default: bool = False, **options: Any
) -> None:
    """Serve ``agent`` on this process's stdin/stdout until the client closes it or
    SIGINT interrupts it (see the module docstring); ``v2`` serves v2 clients too
    (``v2_default``: see :class:`AgentSideConnection`)."""
    from ..transports.stdio import stdio_transport

    transport = await stdio_transport(**options)
    conn = AgentSideConnection(agent, transport, v2=v2, v2_default=v2_default)
    await serve_until_interrupted(conn)


def run_agent(
    agent: Agent | AgentFactory,
    *,
    v2: AgentV2 | None = None,
    v2_default: bool = False,
    **options: Any,
) -> None:
    """Run an agent as a stdio program: the usual body of an agent's ``main()``."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    instance = agent() if callable(agent) and not isinstance(agent, Agent) else agent
    assert isinstance(instance, Agent)
    try:
        asyncio.run(serve_stdio(instance, v2=v2, v2_default=v2_default, **options))
    except KeyboardInterrupt:
        pass
