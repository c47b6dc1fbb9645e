"""Tolerant in what we accept: answers real peers send that the schema does not allow.

Toad answers ``fs/write_text_file`` with ``"result": null`` where the schema says
``{}``, and answers notifications it cannot parse with error responses whose id is
``null``. Both must pass quietly, in both roles, while everything acpwire sends
stays strictly valid.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.agent.connection import Agent, AgentSideConnection
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.engine.connection import Connection, Router
from acpwire.protocol.errors import ErrorCode, RequestError, ResourceNotFound
from acpwire.schema import codec
from acpwire.schema.methods import METHODS, MethodSpec
from acpwire.transports import memory_pair
from acpwire.transports.memory import MemoryTransport


def _accepts_empty_object(spec: MethodSpec) -> bool:
    try:
        codec.decode(b"{}", spec.result)
    except msgspec.ValidationError:
        return False
    return True


EMPTY_RESULT = [m for m in METHODS if m.is_request and _accepts_empty_object(m)]
REQUIRED_RESULT = [m for m in METHODS if m.is_request and not _accepts_empty_object(m)]


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Connection, MemoryTransport]]:
    """An engine connection and the raw transport a test peer answers on."""
    ours, theirs = memory_pair()
    conn = Connection(ours, Router({}, {}), name="test")
    conn.start()
    yield conn, theirs
    await conn.close()


async def _answer_next(peer: MemoryTransport, answer: dict[str, Any]) -> dict[str, Any]:
    """Read one request from ``peer`` and answer it with ``answer`` (plus its id)."""
    line = await asyncio.wait_for(peer.receive(), TIMEOUT)
    assert isinstance(line, bytes)
    request: dict[str, Any] = json.loads(line)
    await peer.send(json.dumps({"jsonrpc": "2.0", "id": request["id"], **answer}).encode())
    return request


def test_the_table_has_methods_of_both_kinds_and_both_sides() -> None:
    assert {m.handled_by for m in EMPTY_RESULT} == {"agent", "client"}
    assert {"fs/write_text_file", "session/set_mode", "terminal/kill"} <= {
        m.name for m in EMPTY_RESULT
    }
    assert {"session/new", "fs/read_text_file"} <= {m.name for m in REQUIRED_RESULT}


@pytest.mark.parametrize("spec", EMPTY_RESULT, ids=lambda m: m.name)
async def test_a_null_result_counts_as_an_empty_object(
    pair: tuple[Connection, MemoryTransport], spec: MethodSpec
) -> None:
    conn, theirs = pair
    call = asyncio.ensure_future(conn.request(spec.name, {}, spec.result))
    await _answer_next(theirs, {"result": None})
    result = await asyncio.wait_for(call, TIMEOUT)
    assert result == codec.decode(b"{}", spec.result)


@pytest.mark.parametrize(
    "spec",
    [m for m in REQUIRED_RESULT if m.name in ("session/new", "fs/read_text_file")],
    ids=lambda m: m.name,
)
async def test_a_null_result_where_fields_are_required_is_still_a_schema_error(
    pair: tuple[Connection, MemoryTransport], spec: MethodSpec
) -> None:
    conn, theirs = pair
    call = asyncio.ensure_future(conn.request(spec.name, {}, spec.result))
    await _answer_next(theirs, {"result": None})
    with pytest.raises(RequestError) as caught:
        await asyncio.wait_for(call, TIMEOUT)
    assert caught.value.code == ErrorCode.INVALID_PARAMS
    assert "does not match the schema" in caught.value.message
    assert "null" in str(caught.value.data)


async def test_error_responses_with_a_null_id_are_logged_once_and_change_nothing(
    pair: tuple[Connection, MemoryTransport], caplog: pytest.LogCaptureFixture
) -> None:
    conn, theirs = pair
    orphan = {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "bad params"}}
    with caplog.at_level(logging.DEBUG, logger="acpwire.engine"):
        for _ in range(20):
            await theirs.send(json.dumps(orphan).encode())
        # A call made after them is still answered normally.
        call = asyncio.ensure_future(conn.request("_x/ping", {"n": 1}))
        await _answer_next(theirs, {"result": {"pong": True}})
        assert await asyncio.wait_for(call, TIMEOUT) == {"pong": True}
    about_orphans = [r for r in caplog.records if "error without id" in r.getMessage()]
    assert len(about_orphans) == 20
    assert [r.levelno for r in about_orphans].count(logging.WARNING) == 1
    assert "bad params" in about_orphans[0].getMessage()
    assert not [r for r in caplog.records if "unknown request id" in r.getMessage()]


class _ReadingAgent(Agent):
    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id="s1")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        await self.client.read_text_file(params.session_id, "/nowhere/missing.txt")
        return s.PromptResponse(stop_reason="end_turn")


class _MissingFiles(Client):
    def capabilities(self) -> s.ClientCapabilities:
        return s.ClientCapabilities(fs=s.FileSystemCapabilities(read_text_file=True))

    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        raise ResourceNotFound("no such file", {"path": params.path})


async def test_a_peers_error_escaping_a_handler_is_not_passed_off_as_this_requests_error() -> None:
    """The client's -32002 for a read is not the prompt's -32002: the prompt gets -32603."""
    a, b = memory_pair()
    agent_side = AgentSideConnection(_ReadingAgent(), a)
    agent_side.start()
    client_side = ClientSideConnection(_MissingFiles(), b)
    try:
        await asyncio.wait_for(client_side.initialize(), TIMEOUT)
        await client_side.agent.new_session("/tmp")
        with pytest.raises(RequestError) as caught:
            await asyncio.wait_for(client_side.agent.prompt("s1", "go"), TIMEOUT)
        assert caught.value.code == ErrorCode.INTERNAL_ERROR
        assert caught.value.data == {"details": "no such file (code -32002)"}
    finally:
        await client_side.close()
        await agent_side.close()
