"""Unstable ACP is opt-in on both roles: routed and typed when the application opts in,
answered -32601 and never advertised otherwise. Every message either side sends is
validated against schema.unstable.json when it opted in and schema.json when not."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.agent.connection import Agent, AgentSideConnection
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.protocol.errors import (
    CapabilityError,
    ErrorCode,
    MethodNotFound,
    UnstableMethodError,
)
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports import memory_pair


def everything() -> s.AgentCapabilities:
    """Agent capabilities that gate every unstable agent method (and stable ones)."""
    return s.AgentCapabilities(
        load_session=True,
        session_capabilities=s.SessionCapabilities(
            list=s.SessionListCapabilities(),
            fork=s.SessionForkCapabilities(),
            archive=s.SessionArchiveCapabilities(),
            status=s.SessionStatusCapabilities(),
            title=s.SessionTitleCapabilities(),
        ),
        auth=s.AgentAuthCapabilities(status=s.AuthStatusCapabilities()),
        providers=s.ProvidersCapabilities(),
        mcp_capabilities=s.McpCapabilities(acp=True),
    )


class UnstableAgent(Agent):
    """Implements every unstable agent method; opts in only when told to."""

    def __init__(self, *, unstable: bool, capabilities: s.AgentCapabilities | None = None) -> None:
        self.unstable = unstable
        self.capabilities = capabilities or everything()
        self.calls: list[tuple[str, Any]] = []
        self.titles: dict[str, str] = {}
        self.archived: set[str] = set()
        self.providers: dict[str, str] = {"main": "anthropic"}
        self.successor_notes: list[s.ProxySuccessorNotification] = []
        self.successor_noted = asyncio.Event()

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(protocol_version=1, agent_capabilities=self.capabilities)

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id="s1")

    async def fork_session(self, params: s.ForkSessionRequest) -> s.ForkSessionResponse:
        self.calls.append(("fork", params.session_id))
        return s.ForkSessionResponse(session_id=f"{params.session_id}-fork")

    async def archive_session(self, params: s.ArchiveSessionRequest) -> s.ArchiveSessionResponse:
        self.archived.add(params.session_id)
        return s.ArchiveSessionResponse()

    async def unarchive_session(
        self, params: s.UnarchiveSessionRequest
    ) -> s.UnarchiveSessionResponse:
        self.archived.discard(params.session_id)
        return s.UnarchiveSessionResponse()

    async def session_status(self, params: s.SessionStatusRequest) -> s.SessionStatusResponse:
        return s.SessionStatusResponse(
            status="saved" if params.session_id in self.archived else "open"
        )

    async def set_session_title(
        self, params: s.SetSessionTitleRequest
    ) -> s.SetSessionTitleResponse:
        self.titles[params.session_id] = params.title.strip()
        return s.SetSessionTitleResponse(title=self.titles[params.session_id])

    async def list_providers(self, params: s.ListProvidersRequest) -> s.ListProvidersResponse:
        return s.ListProvidersResponse(
            providers=[
                s.ProviderInfo(provider_id=pid, supported=[api], required=False)
                for pid, api in self.providers.items()
            ]
        )

    async def set_provider(self, params: s.SetProviderRequest) -> s.SetProviderResponse:
        self.providers[params.provider_id] = params.api_type
        return s.SetProviderResponse()

    async def disable_provider(self, params: s.DisableProviderRequest) -> s.DisableProviderResponse:
        self.providers.pop(params.provider_id, None)
        return s.DisableProviderResponse()

    async def auth_status(self, params: s.AuthStatusRequest) -> s.AuthStatusResponse:
        return s.AuthStatusResponse(
            state="authenticated", accounts=[s.AuthAccount(label="me", active=True)]
        )

    async def initialize_proxy(self, params: s.InitializeRequest) -> s.InitializeResponse:
        # A proxy initializes its successor through the conductor before answering.
        successor = await self.client.proxy_successor(
            "initialize", {"protocolVersion": params.protocol_version}
        )
        return s.InitializeResponse(
            protocol_version=successor["protocolVersion"], agent_capabilities=s.AgentCapabilities()
        )

    async def proxy_successor(self, params: s.ProxySuccessorRequest) -> Any:
        return {"proxied": params.method}

    async def proxy_successor_notification(self, params: s.ProxySuccessorNotification) -> None:
        self.successor_notes.append(params)
        self.successor_noted.set()


class UnstableClient(Client):
    def __init__(self, *, unstable: bool) -> None:
        self.unstable = unstable
        self.auth_updates: list[s.AuthStatusUpdateNotification] = []
        self.auth_update_seen = asyncio.Event()
        self.forwarded: list[s.ProxySuccessorRequest] = []

    def capabilities(self) -> s.ClientCapabilities:
        return s.ClientCapabilities(
            terminal=True, plan=s.PlanCapabilities(), subagents=s.SubagentCapabilities()
        )

    async def auth_status_update(self, params: s.AuthStatusUpdateNotification) -> None:
        self.auth_updates.append(params)
        self.auth_update_seen.set()

    async def proxy_successor(self, params: s.ProxySuccessorRequest) -> Any:
        # As the conductor: the successor agent answers initialize with version 1.
        self.forwarded.append(params)
        return {"protocolVersion": 1, "agentCapabilities": {}}


@dataclass
class Pair:
    agent: UnstableAgent
    agent_side: AgentSideConnection
    agent_wire: WireLog
    client: UnstableClient
    conn: ClientSideConnection
    client_wire: WireLog

    def validate(self, stable: SchemaValidator, unstable: SchemaValidator) -> None:
        """Each side's messages against the schema of the surface it chose."""
        for handler, wire in ((self.agent, self.agent_wire), (self.client, self.client_wire)):
            validator = unstable if handler.unstable else stable
            validator.validate_conversation(wire.sent, wire.received)

    def sent_methods(self, side: str) -> list[str]:
        wire = self.agent_wire if side == "agent" else self.client_wire
        return [m["method"] for m in wire.sent if isinstance(m, dict) and "method" in m]


@asynccontextmanager
async def pair(
    *,
    agent_unstable: bool,
    client_unstable: bool,
    capabilities: s.AgentCapabilities | None = None,
    client_checks: bool = True,
) -> AsyncIterator[Pair]:
    a, b = memory_pair()
    agent_wire, client_wire = WireLog(), WireLog()
    agent = UnstableAgent(unstable=agent_unstable, capabilities=capabilities)
    agent_side = AgentSideConnection(agent, RecordingTransport(a, agent_wire))
    agent_side.start()
    client = UnstableClient(unstable=client_unstable)
    conn = ClientSideConnection(
        client, RecordingTransport(b, client_wire), check_capabilities=client_checks
    )
    try:
        await asyncio.wait_for(conn.initialize(), TIMEOUT)
        yield Pair(agent, agent_side, agent_wire, client, conn, client_wire)
    finally:
        await conn.close()
        await agent_side.close()


async def call(make: Callable[[], Any]) -> Any:
    return await asyncio.wait_for(make(), TIMEOUT)


async def test_an_agent_that_opted_in_serves_every_unstable_method_to_a_client_that_did(
    schema_validator: SchemaValidator, unstable_schema_validator: SchemaValidator
) -> None:
    async with pair(agent_unstable=True, client_unstable=True) as p:
        agent = p.conn.agent
        assert (await call(lambda: agent.fork_session("s1", "/work"))).session_id == "s1-fork"
        await call(lambda: agent.archive_session("s1"))
        assert (await call(lambda: agent.session_status("s1"))).status == "saved"
        await call(lambda: agent.unarchive_session("s1"))
        assert (await call(lambda: agent.session_status("s1"))).status == "open"
        assert (await call(lambda: agent.set_session_title("s1", " Refactor "))).title == "Refactor"
        await call(lambda: agent.set_provider("proxy", "openai", "https://llm.example/v1"))
        await call(lambda: agent.disable_provider("main"))
        listed = await call(agent.list_providers)
        assert [(p.provider_id, p.supported) for p in listed.providers] == [("proxy", ["openai"])]
        status = await call(agent.auth_status)
        assert status.state == "authenticated" and status.accounts[0].label == "me"
        await call(lambda: p.agent_side.client.auth_status_update("unauthenticated"))
        await asyncio.wait_for(p.client.auth_update_seen.wait(), TIMEOUT)
        assert p.client.auth_updates[0].state == "unauthenticated"
        assert p.agent.titles == {"s1": "Refactor"}
        assert p.agent.calls == [("fork", "s1")]
        p.validate(schema_validator, unstable_schema_validator)


async def test_the_initialize_answer_advertises_unstable_capabilities_only_after_opting_in(
    schema_validator: SchemaValidator, unstable_schema_validator: SchemaValidator
) -> None:
    async with pair(agent_unstable=True, client_unstable=True) as p:
        answer = next(m["result"] for m in p.agent_wire.sent if "result" in m)
        caps = answer["agentCapabilities"]
        assert caps["sessionCapabilities"].keys() >= {"fork", "archive", "status", "title"}
        assert caps["providers"] == {} and caps["auth"] == {"status": {}}
        assert caps["mcpCapabilities"]["acp"] is True
        asked = next(m["params"] for m in p.client_wire.sent if m.get("method") == "initialize")
        assert asked["clientCapabilities"].keys() >= {"plan", "subagents"}
    async with pair(agent_unstable=False, client_unstable=False) as p:
        answer = next(m["result"] for m in p.agent_wire.sent if "result" in m)
        assert answer["agentCapabilities"] == {
            "loadSession": True,
            "sessionCapabilities": {"list": {}},
            "auth": {},
            "mcpCapabilities": {},
        }
        asked = next(m["params"] for m in p.client_wire.sent if m.get("method") == "initialize")
        assert asked["clientCapabilities"] == {"terminal": True}
        # The peers see the stable surface too, so gates refuse what was stripped.
        assert p.conn.agent.agent_capabilities.providers is s.UNSET
        p.validate(schema_validator, unstable_schema_validator)


async def test_an_agent_that_did_not_opt_in_answers_every_unstable_method_method_not_found(
    schema_validator: SchemaValidator, unstable_schema_validator: SchemaValidator
) -> None:
    """Even though the class implements them: opting in is what routes them."""
    async with pair(agent_unstable=False, client_unstable=True, client_checks=False) as p:
        agent = p.conn.agent
        for make in (
            lambda: agent.fork_session("s1", "/work"),
            lambda: agent.archive_session("s1"),
            lambda: agent.unarchive_session("s1"),
            lambda: agent.session_status("s1"),
            lambda: agent.set_session_title("s1", "x"),
            agent.list_providers,
            lambda: agent.set_provider("p", "openai", "https://x"),
            lambda: agent.disable_provider("p"),
            agent.auth_status,
            lambda: agent.initialize_proxy(),
            lambda: agent.proxy_successor("session/new", {}),
        ):
            with pytest.raises(MethodNotFound) as caught:
                await call(make)
            assert caught.value.code == ErrorCode.METHOD_NOT_FOUND
        assert p.agent.calls == [] and p.agent.titles == {}
        p.validate(schema_validator, unstable_schema_validator)


async def test_a_side_that_did_not_opt_in_sends_no_unstable_method(
    schema_validator: SchemaValidator, unstable_schema_validator: SchemaValidator
) -> None:
    async with pair(agent_unstable=False, client_unstable=False) as p:
        with pytest.raises(UnstableMethodError, match="session/fork is an unstable ACP method"):
            await p.conn.agent.fork_session("s1", "/work")
        with pytest.raises(UnstableMethodError, match="set `unstable = True` on the agent"):
            await p.agent_side.client.auth_status_update("authenticated")
        with pytest.raises(UnstableMethodError):
            await p.agent_side.client.mcp_message("srv", "tools/list")
        with pytest.raises(UnstableMethodError):
            p.conn.agent.offer_mcp_server("tools", lambda call: call)
        assert p.sent_methods("client") == ["initialize"]
        assert p.sent_methods("agent") == []
        p.validate(schema_validator, unstable_schema_validator)


async def test_a_client_that_did_not_opt_in_answers_unstable_agent_calls_method_not_found(
    schema_validator: SchemaValidator, unstable_schema_validator: SchemaValidator
) -> None:
    async with pair(agent_unstable=True, client_unstable=False) as p:
        peer = p.agent_side.client
        with pytest.raises(MethodNotFound):
            await call(lambda: peer.mcp_message("srv", "tools/list"))
        with pytest.raises(MethodNotFound):
            await call(lambda: peer.proxy_successor("session/update", {}))
        await call(lambda: peer.auth_status_update("authenticated"))
        await call(lambda: p.conn.agent.new_session("/work"))  # still in order afterwards
        assert p.client.auth_updates == []
        p.validate(schema_validator, unstable_schema_validator)


async def test_unstable_methods_are_gated_by_the_capabilities_the_schema_names(
    schema_validator: SchemaValidator, unstable_schema_validator: SchemaValidator
) -> None:
    async with pair(
        agent_unstable=True, client_unstable=True, capabilities=s.AgentCapabilities()
    ) as p:
        agent = p.conn.agent
        for make, capability in (
            (lambda: agent.fork_session("s1", "/w"), "sessionCapabilities.fork"),
            (lambda: agent.archive_session("s1"), "sessionCapabilities.archive"),
            (lambda: agent.unarchive_session("s1"), "sessionCapabilities.archive"),
            (lambda: agent.session_status("s1"), "sessionCapabilities.status"),
            (lambda: agent.set_session_title("s1", "t"), "sessionCapabilities.title"),
            (agent.list_providers, "providers"),
            (lambda: agent.disable_provider("p"), "providers"),
            (agent.auth_status, "auth.status"),
        ):
            with pytest.raises(
                CapabilityError, match=re.escape(f"`{capability}`, which the agent did not")
            ):
                await make()
        # Gated by the agent's own capabilities: what it advertised in initialize.
        peer = p.agent_side.client
        with pytest.raises(CapabilityError, match=r"`auth\.status`, which this agent did not"):
            await peer.auth_status_update("authenticated")
        with pytest.raises(CapabilityError, match=r"`mcpCapabilities\.acp`, which this agent"):
            await peer.mcp_message("srv", "tools/list")
        assert p.sent_methods("client") == ["initialize"]
        assert p.sent_methods("agent") == []
        p.validate(schema_validator, unstable_schema_validator)


async def test_a_conductor_initializes_a_proxy_which_reaches_its_successor_through_it(
    schema_validator: SchemaValidator, unstable_schema_validator: SchemaValidator
) -> None:
    """proxy/initialize and proxy/successor, both ways (x-side "proxy" in the schema)."""
    async with pair(agent_unstable=True, client_unstable=True) as p:
        answer = await call(lambda: p.conn.agent.initialize_proxy(s.ClientCapabilities()))
        assert answer.protocol_version == 1
        assert [(f.method, f.params) for f in p.client.forwarded] == [
            ("initialize", {"protocolVersion": 1})
        ]
        result = await call(lambda: p.conn.agent.proxy_successor("fs/read_text_file", {"x": 1}))
        assert result == {"proxied": "fs/read_text_file"}
        await call(lambda: p.conn.agent.proxy_successor_notification("session/update", {"u": 1}))
        await asyncio.wait_for(p.agent.successor_noted.wait(), TIMEOUT)
        assert [n.method for n in p.agent.successor_notes] == ["session/update"]
        p.validate(schema_validator, unstable_schema_validator)


def test_a_message_of_an_unstable_method_fails_validation_against_the_stable_schema(
    schema_validator: SchemaValidator, unstable_schema_validator: SchemaValidator
) -> None:
    fork = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "session/fork",
        "params": {"sessionId": "s1", "cwd": "/w"},
    }
    unstable_schema_validator.validate(fork)
    with pytest.raises(AssertionError, match="session/fork \\(unstable\\) is not in this schema"):
        schema_validator.validate(fork)
