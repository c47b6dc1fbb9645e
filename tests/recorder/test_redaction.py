"""Redaction happens before anything is written: a recording of a session that carried
secrets holds none of them (docs/recorder.md, "Redaction")."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.recorder import RedactionSettings, Redactor, read_cassette, record_to
from acpwire.recorder.redaction import file_placeholder
from acpwire.transports import spawn

ACP = [sys.executable, "-m", "acpwire.cli.main"]
AGENT = [sys.executable, str(Path(__file__).with_name("secret_agent.py"))]

ENV_TOKEN = "env-token-0123456789-abcdef"  # in the agent's environment, echoed back
MCP_ENV = "mcp-env-password-ZYXWVU-98765"  # an MCP server's env value in session/new
MCP_HEADER = "Bearer mcp-header-token-QWERTY-555"  # an MCP server's Authorization header
META_KEY = "meta-api-key-value-0987"  # under an apiKey key in _meta
SHAPED = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token's shape
FILE_TEXT = "read-file-body-CLASSIFIED-77"  # a file read through the client
WRITTEN = "written-file-body-TOPSECRET-42"  # a file written through the client
SECRETS = [ENV_TOKEN, MCP_ENV, "mcp-header-token-QWERTY-555", META_KEY, SHAPED, FILE_TEXT, WRITTEN]


class FilesClient(Client):
    def __init__(self) -> None:
        self.written: dict[str, str] = {}

    def capabilities(self) -> s.ClientCapabilities:
        return s.ClientCapabilities(
            fs=s.FileSystemCapabilities(read_text_file=True, write_text_file=True)
        )

    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        return s.ReadTextFileResponse(content=FILE_TEXT)

    async def write_text_file(self, params: s.WriteTextFileRequest) -> s.WriteTextFileResponse:
        self.written[params.path] = params.content
        return s.WriteTextFileResponse()


MCP_SERVERS = [
    s.McpServerStdio(
        name="db", command="db-mcp", args=[], env=[s.EnvVariable(name="DB_PASS", value=MCP_ENV)]
    ),
    s.McpServerHttp(
        name="web",
        url="https://mcp.invalid/",
        headers=[s.HttpHeader(name="Authorization", value=MCP_HEADER)],
    ),
]


async def leaky_conversation(conn: ClientSideConnection, cwd: Path) -> None:
    """The session that carries every secret."""
    await asyncio.wait_for(conn.initialize(), TIMEOUT)
    session = await asyncio.wait_for(conn.agent.new_session(str(cwd), MCP_SERVERS), TIMEOUT)
    await asyncio.wait_for(conn.agent.prompt(session.session_id, "leak"), TIMEOUT)
    await asyncio.wait_for(conn.agent.prompt(session.session_id, "files"), TIMEOUT)


def agent_env() -> dict[str, str]:
    return {**os.environ, "ACME_SERVICE_TOKEN": ENV_TOKEN}


@pytest.mark.slow
async def test_a_recording_by_the_proxy_of_a_session_full_of_secrets_holds_none(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "leaky.jsonl"
    argv = [*ACP, "record", "-o", str(cassette), "--redact-files", "--", *AGENT]
    transport = await spawn(argv[0], argv[1:], env=agent_env())
    client = FilesClient()
    conn = ClientSideConnection(client, transport)
    try:
        await leaky_conversation(conn, tmp_path)
    finally:
        await conn.close()
    # The traffic itself was carried unchanged: the client got the real file write.
    assert client.written == {str(tmp_path / "out.txt"): WRITTEN}
    data = cassette.read_bytes()
    assert b"here you go" in data  # the leaking message was recorded...
    assert [secret for secret in SECRETS if secret.encode() in data] == []  # ...without them
    assert read_cassette(cassette).header["redaction"]["enabled"] is True


async def test_record_to_in_process_redacts_the_same_secrets(tmp_path: Path) -> None:
    cassette = tmp_path / "leaky.jsonl"
    transport = await spawn(AGENT[0], AGENT[1:], env=agent_env())
    settings = RedactionSettings(files=True, environment={"ACME_SERVICE_TOKEN": ENV_TOKEN})
    conn = ClientSideConnection(FilesClient(), record_to(transport, cassette, redaction=settings))
    try:
        await leaky_conversation(conn, tmp_path)
    finally:
        await conn.close()
    data = cassette.read_bytes()
    assert b"here you go" in data
    assert [secret for secret in SECRETS if secret.encode() in data] == []
    # File text is replaced by its size and hash, so a replay can still compare it.
    assert file_placeholder(FILE_TEXT).encode() in data
    assert file_placeholder(WRITTEN).encode() in data


async def test_without_redaction_the_secrets_are_recorded(tmp_path: Path) -> None:
    """The control for the two tests above: the same session does carry every secret."""
    cassette = tmp_path / "leaky.jsonl"
    transport = await spawn(AGENT[0], AGENT[1:], env=agent_env())
    settings = RedactionSettings(enabled=False)
    conn = ClientSideConnection(FilesClient(), record_to(transport, cassette, redaction=settings))
    try:
        await leaky_conversation(conn, tmp_path)
    finally:
        await conn.close()
    data = cassette.read_bytes()
    assert [secret for secret in SECRETS if secret.encode() not in data] == []


def redact(record: dict[str, Any], settings: RedactionSettings | None = None) -> dict[str, Any]:
    line = json.dumps(record).encode()
    out: dict[str, Any] = json.loads(Redactor(settings or RedactionSettings()).redact_lines(line))
    return out


@pytest.mark.parametrize(
    "secret",
    [
        "sk-ant-api03-" + "x" * 40,
        "sk-proj-" + "Ab1" * 10,
        "AKIA" + "ABCDEFGHIJKLMNOP",
        "AIza" + "Sy" + "B" * 33,
        "xoxb-1234567890-0987654321098-" + "a1B2c3D4e5F6g7H8i9J0k1L2",
        "glpat-" + "abcdefghij0123456789",
        "hf_" + "abcdefghijklmnopqrstuvwxyz0123456789",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----",
    ],
)
def test_key_shaped_strings_are_replaced_in_any_text(secret: str) -> None:
    record = {"type": "message", "msg": {"params": {"text": f"my key is {secret} ok"}}}
    assert redact(record)["msg"]["params"]["text"] == "my key is [REDACTED] ok"


def test_ordinary_text_ids_and_json_keys_are_left_alone() -> None:
    record = {
        "type": "message",
        "msg": {
            "method": "session/update",
            "params": {
                "sessionId": "0195f2a1-7c4e-4b8a-9d2e-3f6a1b2c4d5e",
                "update": {
                    "sessionUpdate": "available_commands_update",
                    "usage": {"totalTokens": 1234, "cachedReadTokens": 5},
                    "text": "Skills and passwords are discussed in chapter sk-1.",
                },
            },
        },
    }
    assert redact(record) == record


def test_secret_named_keys_env_values_and_auth_headers_are_replaced_and_learned() -> None:
    redactor = Redactor(RedactionSettings(environment={}))
    first = {
        "type": "message",
        "msg": {
            "params": {
                "_meta": {"accessToken": "tok-1234567890", "traceparent": "00-abc"},
                "env": [{"name": "HOME", "value": "/home/someone"}],
                "headers": [
                    {"name": "Authorization", "value": "Basic dXNlcjpwYXNz"},
                    {"name": "Accept", "value": "text/plain"},
                ],
            }
        },
    }
    later = {"type": "message", "msg": {"params": {"text": "echo tok-1234567890 /home/someone"}}}
    out = redactor.redact_lines(json.dumps(first).encode() + b"\n" + json.dumps(later).encode())
    one, two = (json.loads(line) for line in out.split(b"\n"))
    params = one["msg"]["params"]
    assert params["_meta"] == {"accessToken": "[REDACTED]", "traceparent": "00-abc"}
    assert params["env"] == [{"name": "HOME", "value": "[REDACTED]"}]
    assert params["headers"][0]["value"] == "[REDACTED]"
    assert params["headers"][1]["value"] == "text/plain"
    assert two["msg"]["params"]["text"] == "echo [REDACTED] [REDACTED]"


def test_secret_values_of_the_environment_and_command_line_options_are_learned() -> None:
    redactor = Redactor(
        RedactionSettings(environment={"MY_API_KEY": "value-of-the-key-42", "PATH": "/usr/bin"})
    )
    assert redactor.redact_command(
        ["agent", "--token", "cli-token-xyz", "--api-key=k-99999999"]
    ) == [
        "agent",
        "--token",
        "[REDACTED]",
        "--api-key=[REDACTED]",
    ]
    text = b'{"t":"value-of-the-key-42 cli-token-xyz k-99999999 /usr/bin"}'
    assert redactor.redact_lines(text) == b'{"t":"[REDACTED] [REDACTED] [REDACTED] /usr/bin"}'


def test_user_patterns_and_values_are_replaced_and_redaction_can_be_turned_off() -> None:
    line = b'{"t":"ticket ACME-1234 and code word swordfish"}'
    settings = RedactionSettings(patterns=[r"ACME-\d+"], secrets=["swordfish"], environment={})
    assert (
        Redactor(settings).redact_lines(line)
        == b'{"t":"ticket [REDACTED] and code word [REDACTED]"}'
    )
    assert Redactor(RedactionSettings(enabled=False)).redact_lines(line) == line


def test_file_text_recorded_as_size_and_hash_still_compares() -> None:
    from acpwire.recorder.matching import differences

    recorded = {"content": file_placeholder(FILE_TEXT)}
    assert differences(recorded, {"content": FILE_TEXT}) == []
    [changed] = differences(recorded, {"content": FILE_TEXT + "!"})
    assert changed.path == "content"


def test_tokens_in_a_url_are_taken_out() -> None:
    redactor = Redactor(RedactionSettings(environment={}))
    assert (
        redactor.redact_url("wss://me:pa55word-xyz@host/acp?token=abcdef123456&mode=x")
        == "wss://me:[REDACTED]@host/acp?token=[REDACTED]&mode=x"
    )
