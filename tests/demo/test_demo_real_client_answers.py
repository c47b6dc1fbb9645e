"""The demo agent against what real clients answer, not only what the schema promises.

* Toad answers ``fs/write_text_file`` with ``"result": null`` and a read of a missing
  file with ``{"content": ""}``;
* acpx answers a failed read or a command that cannot start with ``-32603`` and the
  reason in ``data.details``.

Writing a new file must work whatever the probing read answers, and the user must be
told the client's reason, not "Internal error".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from _demo_harness import RecordingClient, in_process, run, workspace

from acpwire import schema as s
from acpwire.client.connection import ClientSideConnection
from acpwire.client.permissions import AllowAll
from acpwire.protocol.errors import InternalError
from acpwire.protocol.framing import Oversize
from acpwire.testing import SchemaValidator
from acpwire.transports.base import Transport


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return workspace(root)


class NullWriteResults:
    """Wraps the client's transport: answers to ``fs/write_text_file`` go out as ``null``."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.write_ids: set[Any] = set()
        self.nulls_sent = 0

    async def send(self, message: bytes) -> None:
        value = msgspec.json.decode(message)
        if value.get("id") in self.write_ids and value.get("result") == {}:
            self.write_ids.discard(value["id"])
            value["result"] = None
            self.nulls_sent += 1
            message = msgspec.json.encode(value)
        await self.inner.send(message)

    async def receive(self) -> bytes | Oversize | None:
        message = await self.inner.receive()
        if isinstance(message, bytes):
            value = msgspec.json.decode(message)
            if value.get("method") == "fs/write_text_file":
                self.write_ids.add(value["id"])
        return message

    async def close(self) -> None:
        await self.inner.close()


class ToadLikeClient(RecordingClient):
    """Empty text for a missing file; ``null`` for a write (see :class:`NullWriteResults`)."""

    wire: NullWriteResults

    def connect(self, transport: Transport) -> ClientSideConnection:
        self.wire = NullWriteResults(transport)
        return super().connect(self.wire)

    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        if not Path(params.path).exists():
            return s.ReadTextFileResponse(content="")
        return await super().read_text_file(params)


class AcpxLikeClient(RecordingClient):
    """-32603 with the reason in ``data.details`` for a failed read and a failed spawn."""

    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        if not Path(params.path).exists():
            raise InternalError(data={"details": f"ENOENT: no such file, open '{params.path}'"})
        return await super().read_text_file(params)

    async def create_terminal(self, params: s.CreateTerminalRequest) -> s.CreateTerminalResponse:
        if params.command == "nonexistent-cmd":
            raise InternalError(data={"details": "spawn nonexistent-cmd ENOENT"})
        return await super().create_terminal(params)


async def test_a_null_write_result_counts_as_written(
    ws: Path, tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    client = ToadLikeClient(permissions=AllowAll())
    async with in_process(client, schema_validator, tmp_path / "store.db"):
        state = await client.new_session(ws)
        _, reply = await run(client, state.session_id, "edit notes.txt beta BETA")
        assert client.wire.nulls_sent == 1
        assert (ws / "notes.txt").read_text() == "alpha\nBETA\ngamma\n"
        assert "`notes.txt` was changed through the client" in reply
        (call,) = state.tool_calls.values()
        assert call.status == "completed"


@pytest.mark.parametrize(
    "client_class",
    [ToadLikeClient, AcpxLikeClient],
    ids=["probe-answers-empty-text", "probe-answers-internal-error"],
)
async def test_a_new_file_is_written_whatever_the_probing_read_answers(
    ws: Path,
    tmp_path: Path,
    schema_validator: SchemaValidator,
    client_class: type[RecordingClient],
) -> None:
    client = client_class(permissions=AllowAll())
    async with in_process(client, schema_validator, tmp_path / "store.db"):
        state = await client.new_session(ws)
        stop, reply = await run(client, state.session_id, "write fresh.txt hello")
        assert stop == "end_turn"
        assert (ws / "fresh.txt").read_text() == "hello\n"
        assert "`fresh.txt` was written through the client" in reply
        (call,) = state.tool_calls.values()
        assert call.status == "completed"


async def test_the_clients_details_are_what_the_user_reads(
    ws: Path, tmp_path: Path, schema_validator: SchemaValidator
) -> None:
    client = AcpxLikeClient(permissions=AllowAll())
    async with in_process(client, schema_validator, tmp_path / "store.db"):
        state = await client.new_session(ws)
        await client.set_mode(state.session_id, "code")
        stop, reply = await run(client, state.session_id, "run nonexistent-cmd")
        assert stop == "end_turn" and "did not run" in reply
        (call,) = state.tool_calls.values()
        assert call.status == "failed"
        failure = call.content[-1]
        assert isinstance(failure, s.Content) and isinstance(failure.content, s.TextContent)
        assert failure.content.text == (
            "Could not start nonexistent-cmd: spawn nonexistent-cmd ENOENT"
        )

        _, reply = await run(client, state.session_id, "edit missing.txt a b")
        assert "ENOENT: no such file" in reply and "Internal error" not in reply
