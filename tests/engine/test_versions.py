"""One agent serves v1 and v2-draft clients over one transport; a client offering v2
falls back to v1. Every message either side sends is validated against the schema
of the version the connection speaks (v1 ``schema.json`` or ``v2/schema.json``)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.agent.connection import Agent, AgentSideConnection
from acpwire.agent.v2 import AgentV2, default_info
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.client.v2 import ClientV2
from acpwire.protocol.errors import (
    ConnectionClosedError,
    ErrorCode,
    InvalidParams,
    RequestError,
    VersionMismatchError,
)
from acpwire.schema import v2
from acpwire.testing import RecordingTransport, SchemaValidator, WireLog
from acpwire.transports import memory_pair

INFO = v2.Implementation(name="test-client", version="1.0")


class V1Agent(Agent):
    def __init__(self) -> None:
        self.seen: list[s.InitializeRequest] = []

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        self.seen.append(params)
        return s.InitializeResponse(
            protocol_version=1, agent_capabilities=s.AgentCapabilities(load_session=True)
        )

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id="v1-session")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        await self.client.session_update(
            params.session_id,
            s.AgentMessageChunk(content=s.TextContent(text="hello from v1")),
        )
        return s.PromptResponse(stop_reason="end_turn")


class V2Agent(AgentV2):
    """Accepts a prompt at once and finishes the turn in a task, as v2 asks."""

    def __init__(self) -> None:
        self.seen: list[v2.InitializeRequest] = []
        self.turns: set[asyncio.Task[None]] = set()
        self.cancelled: list[str] = []

    async def initialize(self, params: v2.InitializeRequest) -> v2.InitializeResponse:
        self.seen.append(params)
        return v2.InitializeResponse(
            protocol_version=2,
            info=default_info("v2-test-agent"),
            capabilities=v2.AgentCapabilities(session=v2.SessionCapabilities()),
        )

    async def new_session(self, params: v2.NewSessionRequest) -> v2.NewSessionResponse:
        return v2.NewSessionResponse(session_id="v2-session")

    async def prompt(self, params: v2.PromptRequest) -> v2.PromptResponse:
        message_id = f"user-{len(self.turns)}"
        task = asyncio.ensure_future(self._turn(params, message_id))
        self.turns.add(task)
        return v2.PromptResponse(message_id=message_id)

    async def _turn(self, params: v2.PromptRequest, message_id: str) -> None:
        sid = params.session_id
        await self.client.session_update(
            sid, v2.UserMessage(message_id=message_id, content=params.prompt)
        )
        await self.client.session_update(sid, v2.SessionStateUpdate(state="running"))
        await self.client.session_update(
            sid,
            v2.AgentMessageChunk(
                message_id="agent-1", content=v2.TextContent(text="hello from v2")
            ),
        )
        await self.client.session_update(
            sid, v2.SessionStateUpdate(state="idle", stop_reason="end_turn")
        )

    async def cancel(self, params: v2.CancelSessionNotification) -> None:
        self.cancelled.append(params.session_id)


class V1Client(Client):
    def __init__(self) -> None:
        self.updates: list[s.SessionNotification] = []

    def capabilities(self) -> s.ClientCapabilities:
        return s.ClientCapabilities(
            fs=s.FileSystemCapabilities(read_text_file=True, write_text_file=False)
        )

    async def session_update(self, params: s.SessionNotification) -> None:
        self.updates.append(params)


class V2Client(ClientV2):
    def __init__(self) -> None:
        self.updates: list[v2.UpdateSessionNotification] = []
        self.idle = asyncio.Event()

    def capabilities(self) -> v2.ClientCapabilities:
        return v2.ClientCapabilities(
            elicitation=v2.ElicitationCapabilities(form=v2.ElicitationFormCapabilities())
        )

    async def session_update(self, params: v2.UpdateSessionNotification) -> None:
        self.updates.append(params)
        update = params.update
        if isinstance(update, v2.SessionStateUpdate) and update.state == "idle":
            self.idle.set()


@dataclass
class Pair:
    agent: V1Agent
    agent_v2: V2Agent | None
    agent_side: AgentSideConnection
    agent_wire: WireLog
    client: V1Client
    client_v2: V2Client | None
    conn: ClientSideConnection
    client_wire: WireLog

    def validate(self, schema: dict[str, Any]) -> None:
        """Every message of both sides against ``schema``."""
        for wire in (self.agent_wire, self.client_wire):
            SchemaValidator(schema).validate_conversation(wire.sent, wire.received)


@asynccontextmanager
async def pair(
    *, agent_v2: bool = True, client_v2: bool = True, v2_default: bool = False
) -> AsyncIterator[Pair]:
    a, b = memory_pair()
    agent_wire, client_wire = WireLog(), WireLog()
    agent, av2 = V1Agent(), (V2Agent() if agent_v2 else None)
    agent_side = AgentSideConnection(
        agent, RecordingTransport(a, agent_wire), v2=av2, v2_default=v2_default
    )
    agent_side.start()
    client, cv2 = V1Client(), (V2Client() if client_v2 else None)
    conn = ClientSideConnection(client, RecordingTransport(b, client_wire), v2=cv2)
    try:
        yield Pair(agent, av2, agent_side, agent_wire, client, cv2, conn, client_wire)
    finally:
        await conn.close()
        await agent_side.close()


async def within(awaitable: Any) -> Any:
    return await asyncio.wait_for(awaitable, TIMEOUT)


async def test_a_v1_client_of_an_agent_serving_both_gets_v1_and_only_v1(
    official_schema: dict[str, Any],
) -> None:
    async with pair(client_v2=False) as p:
        answer = await within(p.conn.initialize())
        assert answer.protocol_version == 1
        session = await within(p.conn.agent.new_session("/tmp"))
        result = await within(p.conn.agent.prompt(session.session_id, "hi"))
        assert result.stop_reason == "end_turn"
        assert p.agent_side.version == 1
        assert p.agent_v2 is not None and p.agent_v2.seen == []
        assert p.client.updates[0].update == s.AgentMessageChunk(
            content=s.TextContent(text="hello from v1")
        )
        assert p.agent_side.client_v2 is not None and p.agent_side.client_v2.retired
    p.validate(official_schema)


async def test_a_v2_client_gets_v2_a_prompt_answers_with_its_message_id_and_idle_ends_the_turn(
    official_v2_schema: dict[str, Any],
) -> None:
    async with pair() as p:
        assert await within(p.conn.negotiate(info=INFO)) == 2
        assert p.conn.version == p.agent_side.version == 2
        assert p.agent_v2 is not None and p.client_v2 is not None and p.conn.agent_v2
        assert p.agent_v2.seen[0].info == INFO
        assert p.agent_v2.seen[0].capabilities == p.client_v2.capabilities()
        assert p.agent.seen == []  # the v1 handler never heard of this client
        session = await within(p.conn.agent_v2.new_session("/tmp"))
        answer = await within(p.conn.agent_v2.prompt(session.session_id, "hi"))
        assert answer.message_id == "user-0"
        await within(p.client_v2.idle.wait())
        kinds = [type(u.update).__name__ for u in p.client_v2.updates]
        assert kinds == [
            "UserMessage",
            "SessionStateUpdate",
            "AgentMessageChunk",
            "SessionStateUpdate",
        ]
        last = p.client_v2.updates[-1].update
        assert isinstance(last, v2.SessionStateUpdate) and last.stop_reason == "end_turn"
        chunk = p.client_v2.updates[2].update
        assert isinstance(chunk, v2.AgentMessageChunk) and chunk.message_id == "agent-1"
    p.validate(official_v2_schema)


async def test_a_v2_client_falls_back_to_v1_and_the_v1_agent_still_learns_its_capabilities(
    official_schema: dict[str, Any], official_v2_schema: dict[str, Any]
) -> None:
    async with pair(agent_v2=False) as p:
        assert await within(p.conn.negotiate(info=INFO)) == 1
        assert p.conn.version == 1
        seen = p.agent.seen[0]
        # The offer's v1 fields: what a v1-only agent reads.
        assert seen.client_capabilities == p.client.capabilities()
        assert isinstance(seen.client_info, s.Implementation)
        assert seen.client_info.name == "test-client"
        session = await within(p.conn.agent.new_session("/tmp"))
        result = await within(p.conn.agent.prompt(session.session_id, "hi"))
        assert result.stop_reason == "end_turn"
        assert p.conn.agent_v2 is not None
        with pytest.raises(VersionMismatchError, match="speaks ACP v1"):
            await p.conn.agent_v2.new_session("/tmp")
    p.validate(official_schema)
    offer = p.client_wire.sent[0]
    # The one initialize the fallback needs reads right in both versions.
    SchemaValidator(official_v2_schema).validate(offer)
    assert offer["params"]["protocolVersion"] == 2 and "info" in offer["params"]


async def test_the_v1_peer_of_a_connection_that_chose_v2_refuses_and_sends_nothing() -> None:
    async with pair() as p:
        await within(p.conn.negotiate(info=INFO))
        sent = len(p.client_wire.sent)
        with pytest.raises(VersionMismatchError, match="speaks ACP v2"):
            await p.conn.agent.new_session("/tmp")
        assert len(p.client_wire.sent) == sent


@pytest.mark.parametrize(
    "version", ["two", -1, 65536, None, 1.5, True], ids=lambda v: f"protocolVersion={v!r}"
)
async def test_a_malformed_version_is_invalid_params_and_the_client_may_initialize_again(
    version: object,
) -> None:
    async with pair() as p:
        params: dict[str, Any] = {"info": {"name": "x", "version": "1"}}
        if version is not None:
            params["protocolVersion"] = version
        with pytest.raises(InvalidParams):
            await within(p.conn.connection.request("initialize", params))
        assert await within(p.conn.negotiate(info=INFO)) == 2


@pytest.mark.parametrize("asked", [3, 65535])
async def test_a_client_asking_a_later_version_than_2_gets_v1_in_v1s_shape(
    asked: int, official_schema: dict[str, Any]
) -> None:
    """INIT-009: the draft is not a version the agent supports for anyone who did not ask
    for it: a v1 client asking 65535 (expecting the newest supported version) gets v1."""
    async with pair() as p:
        answer = await within(p.conn.connection.request("initialize", {"protocolVersion": asked}))
        assert answer["protocolVersion"] == 1
        assert "agentCapabilities" in answer and "info" not in answer
        assert p.agent_side.version == 1
        assert p.agent_v2 is not None and p.agent_v2.seen == []
        p.validate(official_schema)


async def test_v2_default_needs_a_v2_agent() -> None:
    a, _ = memory_pair()
    with pytest.raises(ValueError, match="v2_default"):
        AgentSideConnection(V1Agent(), a, v2_default=True)


async def test_an_agent_that_made_v2_its_default_answers_2_to_a_later_version() -> None:
    """``v2_default=True``: the author's explicit choice; even an ``info`` v2 cannot read
    is taken (a later version's initialize)."""
    async with pair(v2_default=True) as p:
        answer = await within(
            p.conn.connection.request(
                "initialize", {"protocolVersion": 7, "info": "a string now", "capabilities": 5}
            )
        )
        assert answer["protocolVersion"] == 2
        assert p.agent_v2 is not None
        seen = p.agent_v2.seen[0]
        assert seen.protocol_version == 2
        assert seen.info == v2.Implementation(name="unknown", version="unknown")


async def test_a_client_asking_version_zero_of_an_agent_serving_both_keeps_v1s_answer() -> None:
    async with pair() as p:
        answer = await within(p.conn.connection.request("initialize", {"protocolVersion": 0}))
        assert answer["protocolVersion"] == 1
        assert p.agent_side.version == 1


async def test_a_repeated_initialize_on_v2_must_not_ask_for_less_than_2() -> None:
    async with pair() as p:
        await within(p.conn.negotiate(info=INFO))
        with pytest.raises(RequestError) as caught:
            await within(
                p.conn.connection.request(
                    "initialize", {"protocolVersion": 1, "info": {"name": "x", "version": "1"}}
                )
            )
        assert caught.value.code == ErrorCode.INVALID_REQUEST
        again = await within(
            p.conn.connection.request(
                "initialize", {"protocolVersion": 2, "info": {"name": "x", "version": "1"}}
            )
        )
        assert again["protocolVersion"] == 2


async def test_v1_methods_are_not_routed_once_v2_was_chosen() -> None:
    async with pair() as p:
        await within(p.conn.negotiate(info=INFO))
        with pytest.raises(RequestError) as caught:
            await within(
                p.conn.connection.request(
                    "session/load", {"sessionId": "x", "cwd": "/tmp", "mcpServers": []}
                )
            )
        assert caught.value.code == ErrorCode.METHOD_NOT_FOUND


class SlowNotingClient(V1Client):
    """Its handler of an extension notification waits for ``gate``: messages behind it queue."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def ext_notification(self, method: str, params: Any) -> None:
        await self.gate.wait()


@pytest.mark.parametrize("version", [1, 2])
async def test_what_the_agent_sends_right_after_its_answer_meets_the_chosen_versions_routes(
    version: int,
) -> None:
    """The answer and a session/update queue behind a notification still being handled:
    the routes switch in receive order, between the two, not when the task awaiting
    the answer happens to run."""
    agent_end, client_end = memory_pair()
    client, client_v2 = SlowNotingClient(), V2Client()
    conn = ClientSideConnection(client, client_end, v2=client_v2)
    try:
        negotiating = asyncio.ensure_future(conn.negotiate(info=INFO))
        offer = json.loads(await within(agent_end.receive()))
        if version == 2:
            answer: dict[str, Any] = {"protocolVersion": 2, "info": {"name": "a", "version": "1"}}
            update: dict[str, Any] = {"sessionUpdate": "state_update", "state": "idle"}
        else:
            answer = {"protocolVersion": 1, "agentCapabilities": {}}
            update = {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "x"},
            }
        for message in (
            {"jsonrpc": "2.0", "method": "_busy", "params": {}},
            {"jsonrpc": "2.0", "id": offer["id"], "result": answer},
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": "s", "update": update},
            },
        ):
            await agent_end.send(json.dumps(message).encode())
        client.gate.set()
        assert await within(negotiating) == version
        await wait_until(lambda: client.updates or client_v2.updates, "the update is handled")
        if version == 2:
            assert client.updates == []
            assert isinstance(client_v2.updates[0].update, v2.SessionStateUpdate)
        else:
            assert client_v2.updates == []
            assert isinstance(client.updates[0].update, s.AgentMessageChunk)
    finally:
        await conn.close()


async def test_an_answer_that_is_neither_1_nor_2_is_a_version_mismatch() -> None:
    agent_end, client_end = memory_pair()
    conn = ClientSideConnection(Client(), client_end, v2=ClientV2())
    try:
        negotiating = asyncio.ensure_future(conn.negotiate(info=INFO))
        offer = json.loads(await within(agent_end.receive()))
        await agent_end.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": offer["id"], "result": {"protocolVersion": 3}}
            ).encode()
        )
        with pytest.raises(VersionMismatchError, match="3"):
            await within(negotiating)
    finally:
        await conn.close()


async def test_an_agent_without_v2_is_the_v1_agent_it_always_was() -> None:
    """No negotiating route, no v2 peer: a v2 offer is answered 1 by the v1 handler."""
    async with pair(agent_v2=False, client_v2=False) as p:
        assert p.agent_side.client_v2 is None
        assert (
            p.agent_side.connection.router.requests["initialize"].params_type is s.InitializeRequest
        )
        answer = await within(
            p.conn.connection.request(
                "initialize", {"protocolVersion": 2, "info": {"name": "x", "version": "1"}}
            )
        )
        assert answer["protocolVersion"] == 1


async def test_an_interrupt_cancels_the_sessions_prompted_in_v2() -> None:
    """``interrupt`` (SIGINT on a stdio agent) does what ``session/cancel`` does for every
    session that got a prompt, in the version the connection chose, then closes."""
    async with pair() as p:
        assert await within(p.conn.negotiate(info=INFO)) == 2
        assert p.agent_v2 is not None and p.conn.agent_v2 is not None
        session = await within(p.conn.agent_v2.new_session("/tmp"))
        await within(p.conn.agent_v2.prompt(session.session_id, "hi"))
        await within(p.agent_side.interrupt(grace=TIMEOUT))
        assert p.agent_v2.cancelled == [session.session_id]
        assert p.agent_side.connection.closed


class HangingV1Agent(V1Agent):
    def __init__(self) -> None:
        super().__init__()
        self.prompted = asyncio.Event()
        self.cancelled: list[str] = []

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        self.prompted.set()
        await asyncio.Event().wait()  # until the connection closes
        raise AssertionError("a prompt that never ends ended")

    async def cancel(self, params: s.CancelNotification) -> None:
        self.cancelled.append(params.session_id)


async def test_an_interrupt_cancels_the_sessions_prompted_in_v1_on_a_connection_serving_both() -> (
    None
):
    a, b = memory_pair()
    agent, agent_v2 = HangingV1Agent(), V2Agent()
    agent_side = AgentSideConnection(agent, a, v2=agent_v2)
    agent_side.start()
    conn = ClientSideConnection(V1Client(), b)
    try:
        await within(conn.initialize())
        assert agent_side.version == 1
        prompting = asyncio.ensure_future(conn.agent.prompt("v1-session", "hi"))
        await within(agent.prompted.wait())
        await within(agent_side.interrupt(grace=0.1))  # the prompt never answers
        assert agent.cancelled == ["v1-session"] and agent_v2.cancelled == []
        assert agent_side.connection.closed
        with pytest.raises(ConnectionClosedError):  # closed before the prompt answered
            await within(prompting)
    finally:
        await conn.close()
        await agent_side.close()
