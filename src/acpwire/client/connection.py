"""Connecting a client to an agent: v1, or an offer of the v2 draft that the agent's
``initialize`` answer accepts or declines. Mirrors :mod:`acpwire.agent.connection`.

This module sits above the two protocol versions of the low tier,
:mod:`acpwire.client.v1` (:class:`Client`, :class:`AgentPeer`) and
:mod:`acpwire.client.v2` (:class:`~acpwire.client.v2.ClientV2`); neither imports the
other, and the choice between them is made here and nowhere else.

The v2 draft is opt-in: ``ClientSideConnection(client, transport, v2=client_v2)``
and :meth:`ClientSideConnection.negotiate` offer version 2 in one ``initialize``
that a v1 agent reads too (:func:`~acpwire.protocol.version.v2_offer`). An agent
answering 2 gets the :class:`~acpwire.client.v2.ClientV2` and ``conn.agent_v2``; one
answering 1 gets the v1 ``client`` and ``conn.agent``, as if v1 had been asked.
The routes switch in receive order, right after the answer (see
:mod:`acpwire.engine.connection`), and the other version's peer is retired.
:meth:`ClientSideConnection.initialize` stays v1. Without ``v2`` the v2 models are
never loaded.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import schema as s
from ..engine.connection import Connection
from ..protocol.errors import ConnectionClosedError, VersionMismatchError
from ..protocol.version import PROTOCOL_VERSION, V2_DRAFT, answered_version, v1_shaped, v2_offer
from ..transports.base import Transport
from ..transports.subprocess import SubprocessTransport, spawn
from .v1 import AgentPeer, Client, V1Layer

if TYPE_CHECKING:
    from ..schema import v2 as v2_models
    from .v2 import AgentPeerV2, ClientV2, V2Layer

__all__ = ["AgentPeer", "Client", "ClientSideConnection", "connect"]

log = logging.getLogger("acpwire.client")


class ClientSideConnection:
    """Serves a :class:`Client` over a transport and exposes the agent as :attr:`agent`
    (and, given ``v2`` and once :meth:`negotiate` chose v2, as :attr:`agent_v2`)."""

    def __init__(
        self,
        client: Client,
        transport: Transport,
        *,
        check_capabilities: bool = True,
        v2: ClientV2 | None = None,
    ) -> None:
        self.client = client
        self.client_v2 = v2
        self.transport = transport
        self.version: int | None = None
        """The protocol version :meth:`initialize` or :meth:`negotiate` settled on."""
        self.v1 = V1Layer(client)
        """The v1 layer of this connection: its routes and agent peer."""
        self.connection = Connection(transport, self.v1.router, name="client")
        self.agent: AgentPeer = self.v1.attach(self.connection, check_capabilities)
        self.v2: V2Layer | None = None
        """The v2 layer of this connection (when ``v2`` is given): its routes and agent peer."""
        if v2 is not None:
            from .v2 import V2Layer  # the v2 models load only for applications that opt in

            self.v2 = V2Layer(v2)
            self.v2.attach(self.connection, check_capabilities)
        self.connection.start()

    @property
    def agent_v2(self) -> AgentPeerV2 | None:
        """The v2 agent (when ``v2`` is given); usable once :meth:`negotiate` chose v2."""
        return None if self.v2 is None else self.v2.agent

    async def negotiate(
        self,
        *,
        info: v2_models.Implementation | None = None,
        client_capabilities: s.ClientCapabilities | None = None,
    ) -> int:
        """``initialize`` offering the v2 draft, falling back to v1; returns the version.

        ``info`` names this client (required in v2; it also goes out as v1's
        ``clientInfo``). The v2 capabilities are the v2 handler's
        (:meth:`~acpwire.client.v2.ClientV2.capabilities`), the v1 ones
        ``client_capabilities`` or the v1 handler's. Afterwards :attr:`agent_v2` (v2)
        or :attr:`agent` (v1) calls the agent and the other peer refuses to; the
        answer is in its ``initialize_response``. Without a v2 handler this is a v1
        ``initialize``. Raises :class:`VersionMismatchError` for an answer that is
        neither 1 nor 2.
        """
        if self.v2 is None:
            v1_info = (
                None if info is None else s.Implementation(name=info.name, version=info.version)
            )
            await self.initialize(client_info=v1_info, client_capabilities=client_capabilities)
            return PROTOCOL_VERSION
        from .. import __version__
        from ..schema import v2 as v2_models

        v2_layer = self.v2
        v1_caps = self.agent.own_capabilities(
            client_capabilities if client_capabilities is not None else self.client.capabilities()
        )
        info = info or v2_models.Implementation(name="acpwire", version=__version__)
        offer = v2_offer(
            v2_layer.offer(info),
            None if v1_caps is None else s.to_json(v1_caps),
            s.to_json(s.Implementation(name=info.name, version=info.version, title=info.title)),
        )
        chosen: list[int] = []

        def switch(raw: object) -> None:
            # Runs in receive order (Connection.request's ``then``): whatever the agent
            # sends after its answer already meets the routes of the version it chose.
            version = answered_version(raw)
            if version == V2_DRAFT and v1_shaped(raw):
                log.warning(
                    "the agent answered protocol version 2 in v1's shape "
                    "(agentCapabilities/agentInfo, no info): speaking v1 with it"
                )
                version = PROTOCOL_VERSION
            if version == V2_DRAFT:
                self.connection.use_router(v2_layer.router)
                self.agent.retire(V2_DRAFT)
            elif version == PROTOCOL_VERSION:
                v2_layer.agent.retire(PROTOCOL_VERSION)
            else:
                raise VersionMismatchError(
                    f"agent answered protocol version {version!r} to an offer of {V2_DRAFT}; "
                    f"this client speaks {PROTOCOL_VERSION} and {V2_DRAFT}"
                )
            chosen.append(version)

        raw: object = await self.connection.request("initialize", offer, then=switch)
        if chosen[0] == V2_DRAFT:
            v2_layer.agent.adopt_answer(raw)
        else:
            self.agent.adopt_answer(raw)
        self.version = chosen[0]
        return self.version

    async def initialize(self, **kwargs: Any) -> s.InitializeResponse:
        """v1 ``initialize`` with the client's own :meth:`Client.capabilities`."""
        kwargs.setdefault("client_capabilities", self.client.capabilities())
        result = await self.agent.initialize(**kwargs)
        self.version = PROTOCOL_VERSION
        return result

    async def close(self) -> None:
        await self.connection.close()

    async def __aenter__(self) -> ClientSideConnection:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


@contextlib.asynccontextmanager
async def connect(
    client: Client,
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    initialize: bool = True,
    **spawn_options: Any,
) -> AsyncGenerator[ClientSideConnection, None]:
    """Spawn an agent, connect ``client`` to it and (by default) initialize.

    On exit the connection is closed and the agent stopped: stdin closed, then
    terminate, then kill. An agent that ends during ``initialize`` raises
    :class:`~acpwire.protocol.errors.ConnectionClosedError` saying how it ended and
    what it last wrote to stderr.
    """
    transport: SubprocessTransport = await spawn(command, args, env=env, cwd=cwd, **spawn_options)
    conn = ClientSideConnection(client, transport)
    try:
        if initialize:
            try:
                await conn.initialize()
            except ConnectionClosedError:
                await conn.close()  # the agent is stopped, so its exit status is known
                ended = transport.ended("initialize")
                raise ConnectionClosedError(f"agent {command!r} {ended}", broken=True) from None
        yield conn
    finally:
        await conn.close()
