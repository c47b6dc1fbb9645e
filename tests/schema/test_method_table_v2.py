"""The v2 draft's method table, checked against the pinned v2 schema, and what makes v2
more than v1 with a new number, read from that schema (so a pin that changes it fails
here first)."""

from __future__ import annotations

import inspect
import json
from typing import Any

import msgspec
import pytest

from acpwire.agent.v2 import AgentV2, ClientPeerV2
from acpwire.client.v2 import AgentPeerV2, ClientV2
from acpwire.engine.roles import build_router
from acpwire.schema import v2
from acpwire.schema.methods import V1, V2, V2_ALL, V2_METHODS, MethodTable

META = {
    "agentMethods": {
        "initialize", "auth/login", "session/new", "session/set_config_option",
        "session/prompt", "session/cancel", "session/list", "session/delete",
        "session/resume", "session/close", "auth/logout",
    },
    "clientMethods": {
        "session/request_permission", "session/update", "elicitation/create",
        "elicitation/complete",
    },
    "protocolMethods": {"$/cancel_request"},
}  # fmt: skip
"""The method names by side that the protocol repository's ``schema/v2/meta.json`` lists
for the pinned v2 draft (the npm package ships no meta.json)."""


def rows(table: MethodTable, side: str) -> set[tuple[str, str]]:
    return {(m.name, m.kind) for m in table.handled_by(side)}  # type: ignore[arg-type]


def properties(schema: dict[str, Any], name: str) -> set[str]:
    return set(schema["$defs"][name].get("properties", {}))


def required(schema: dict[str, Any], name: str) -> set[str]:
    return set(schema["$defs"][name].get("required", []))


def test_every_x_method_of_the_v2_schema_has_a_row_with_its_stability(
    official_v2_schema: dict[str, Any],
) -> None:
    from schema_source import find_schema

    path = find_schema("v2/schema.unstable.json")
    assert path is not None
    unstable = json.loads(path.read_text())
    seen = set()
    for name, d in unstable["$defs"].items():
        if "x-method" not in d or name.endswith("Response"):
            continue
        matching = [m for m in V2_METHODS if m.params_def == name]
        assert matching, f"no row for {name} ({d['x-method']})"
        for m in matching:
            assert m.name == d["x-method"]
            stable = official_v2_schema["$defs"].get(name, {}).get("x-method") == m.name
            assert m.stability == ("stable" if stable else "unstable"), name
            seen.add(m)
    assert seen == set(V2_METHODS)
    assert {m.stability for m in V2.methods} == {"stable"}
    assert len(V2_ALL.methods) > len(V2.methods)


def test_the_v2_table_agrees_with_the_protocol_repositorys_v2_meta_json() -> None:
    assert META["agentMethods"] <= {m.name for m in V2.handled_by("agent")}
    assert META["clientMethods"] == {m.name for m in V2.handled_by("client")}
    assert META["protocolMethods"] == {m.name for m in V2.handled_by("both")}


def test_v1_methods_that_v2_removed_or_renamed_are_not_in_the_v2_table() -> None:
    """What the pinned v2 schema dropped: client files and terminals, session/load and
    modes; authenticate/logout live on as auth/login and auth/logout."""
    v1_only = {m.name for m in V1.methods} - {m.name for m in V2_ALL.methods}
    assert v1_only == {
        "authenticate",
        "logout",
        "session/load",
        "session/set_mode",
        "fs/read_text_file",
        "fs/write_text_file",
        "terminal/create",
        "terminal/output",
        "terminal/release",
        "terminal/wait_for_exit",
        "terminal/kill",
    }
    new = {m.name for m in V2.methods} - {m.name for m in V1.methods}
    assert new == {"auth/login", "auth/logout", "tool_call/cancel", "terminal/cancel"}


def test_initialize_carries_info_and_capabilities_on_both_sides_in_v2(
    official_schema: dict[str, Any], official_v2_schema: dict[str, Any]
) -> None:
    request, response = "InitializeRequest", "InitializeResponse"
    assert properties(official_v2_schema, request) >= {"protocolVersion", "info", "capabilities"}
    assert required(official_v2_schema, request) == {"protocolVersion", "info"}
    assert required(official_v2_schema, response) == {"protocolVersion", "info"}
    assert not properties(official_v2_schema, request) & {"clientInfo", "clientCapabilities"}
    assert not properties(official_v2_schema, response) & {"agentInfo", "agentCapabilities"}
    assert properties(official_schema, request) >= {"clientInfo", "clientCapabilities"}


def test_a_v2_prompt_answers_with_a_message_id_and_the_stop_reason_moved_to_the_idle_state(
    official_schema: dict[str, Any], official_v2_schema: dict[str, Any]
) -> None:
    assert required(official_v2_schema, "PromptResponse") == {"messageId"}
    assert "stopReason" not in properties(official_v2_schema, "PromptResponse")
    assert "stopReason" in required(official_schema, "PromptResponse")
    assert "stopReason" in properties(official_v2_schema, "IdleStateUpdate")
    idle = v2.decode(
        b'{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}',
        v2.SessionUpdate,  # type: ignore[arg-type]
    )
    assert isinstance(idle, v2.SessionStateUpdate)
    assert (idle.state, idle.stop_reason) == ("idle", "cancelled")


def test_v2_message_chunks_carry_a_message_id(
    official_schema: dict[str, Any], official_v2_schema: dict[str, Any]
) -> None:
    assert "messageId" in required(official_v2_schema, "ContentChunk")
    assert "messageId" not in required(official_schema, "ContentChunk")
    with pytest.raises(msgspec.ValidationError, match="messageId"):
        v2.decode(
            b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}',
            v2.SessionUpdate,  # type: ignore[arg-type]
        )


def test_every_v2_agent_method_is_routed_to_an_agent_v2_handler_and_nothing_else() -> None:
    router = build_router(AgentV2(), "agent", V2)
    assert {(n, "request") for n in router.requests} | {
        (n, "notification") for n in router.notifications
    } == rows(V2, "agent")
    for name, route in router.requests.items():
        spec = V2.get(name, "agent")
        assert spec is not None and route.params_type is spec.params


def test_every_v2_client_method_is_routed_to_a_client_v2_handler_and_nothing_else() -> None:
    router = build_router(ClientV2(), "client", V2)
    assert {(n, "request") for n in router.requests} | {
        (n, "notification") for n in router.notifications
    } == rows(V2, "client")


@pytest.mark.parametrize(("peer", "side"), [(AgentPeerV2, "agent"), (ClientPeerV2, "client")])
def test_each_v2_peer_can_call_every_v2_method_of_the_other_side(peer: type, side: str) -> None:
    assert peer.side == side
    for spec in V2.handled_by(side):  # type: ignore[arg-type]
        if spec.name == "initialize":
            continue  # the connection negotiates it (ClientSideConnection.negotiate)
        fn = getattr(peer, spec.python_name, None)
        assert fn is not None and inspect.iscoroutinefunction(fn), (
            f"{peer.__name__} lacks {spec.python_name}"
        )


def test_every_v2_gate_names_a_field_of_the_advertising_sides_v2_capabilities() -> None:
    for spec in V2_ALL.methods:
        gate = spec.gate
        if gate is None:
            continue
        model: Any = (
            v2.AgentCapabilities if gate.advertised_by == "agent" else v2.ClientCapabilities
        )
        for part in gate.path.split("."):
            fields = {f.encode_name: f for f in msgspec.structs.fields(model)}
            assert part in fields, f"{spec.name}: {gate.path}"
            kinds = getattr(fields[part].type, "__args__", (fields[part].type,))
            model = next(k for k in kinds if isinstance(k, type) and k.__name__ != "UnsetType")
