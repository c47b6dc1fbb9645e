"""What a connection that did not opt in to unstable ACP leaves out of what it advertises."""

from __future__ import annotations

from typing import Any

from acpwire import schema as s
from acpwire.schema.stability import without_unstable
from acpwire.testing import SchemaValidator


def test_unstable_capabilities_are_left_out_at_any_depth_and_stable_ones_kept(
    schema_validator: SchemaValidator,
) -> None:
    answer = s.InitializeResponse(
        protocol_version=1,
        agent_capabilities=s.AgentCapabilities(
            load_session=True,
            session_capabilities=s.SessionCapabilities(
                list=s.SessionListCapabilities(),
                fork=s.SessionForkCapabilities(),
                title=s.SessionTitleCapabilities(),
            ),
            mcp_capabilities=s.McpCapabilities(http=True, acp=True),
            auth=s.AgentAuthCapabilities(
                logout=s.LogoutCapabilities(), status=s.AuthStatusCapabilities()
            ),
            providers=s.ProvidersCapabilities(),
        ),
        auth_methods=[s.AuthMethodAgent(id="token", name="Token")],
    )
    stripped: Any = s.to_json(without_unstable(answer))
    assert stripped == {
        "protocolVersion": 1,
        "agentCapabilities": {
            "loadSession": True,
            "sessionCapabilities": {"list": {}},
            "mcpCapabilities": {"http": True},
            "auth": {"logout": {}},
        },
        "authMethods": [{"id": "token", "name": "Token"}],
    }
    schema_validator.note_request({"jsonrpc": "2.0", "id": 0, "method": "initialize"})
    schema_validator.validate({"jsonrpc": "2.0", "id": 0, "result": stripped})


def test_a_value_without_unstable_fields_comes_back_as_the_same_object() -> None:
    caps = s.ClientCapabilities(fs=s.FileSystemCapabilities(read_text_file=True), terminal=True)
    assert without_unstable(caps) is caps
    listed = [s.SessionInfo(session_id="a", cwd="/w"), s.SessionInfo(session_id="b", cwd="/w")]
    assert without_unstable(listed) is listed
    archived = [s.SessionInfo(session_id="a", cwd="/w", archived=True)]
    assert s.to_json(without_unstable(archived)[0]) == {"sessionId": "a", "cwd": "/w"}
