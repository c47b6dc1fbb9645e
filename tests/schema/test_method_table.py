"""One method table, and every method routed on the right side, stable and unstable."""

from __future__ import annotations

import inspect
from typing import Any

import msgspec
import pytest

from acpwire import schema as s
from acpwire.agent.connection import Agent, ClientPeer
from acpwire.client.connection import AgentPeer, Client
from acpwire.engine.roles import build_router
from acpwire.schema.methods import (
    AGENT_METHODS,
    BY_NAME,
    CLIENT_METHODS,
    METHODS,
    PROTOCOL_METHODS,
    V1,
    V1_METHODS,
    V1_UNSTABLE,
    MethodTable,
)

META = {
    "agentMethods": {
        "initialize", "authenticate", "session/new", "session/load", "session/set_mode",
        "session/set_config_option", "session/prompt", "session/cancel", "session/list",
        "session/delete", "session/resume", "session/close", "logout",
    },
    "clientMethods": {
        "session/request_permission", "session/update", "fs/write_text_file",
        "fs/read_text_file", "terminal/create", "terminal/output", "terminal/release",
        "terminal/wait_for_exit", "terminal/kill", "elicitation/create",
        "elicitation/complete",
    },
    "protocolMethods": {"$/cancel_request"},
}  # fmt: skip
"""The method names by side that the protocol repository's ``schema/v1/meta.json`` lists
for the pinned stable schema (the npm package ships no meta.json): an account of the
methods independent of the schema the table is generated from."""

UNSTABLE_AGENT_REQUESTS = {
    "session/fork",
    "session/archive",
    "session/unarchive",
    "session/status",
    "session/set_title",
    "providers/list",
    "providers/set",
    "providers/disable",
    "auth/status",
    "proxy/initialize",
    "proxy/successor",
}
"""The unstable methods an agent serves, as the issue lists them (proxy methods mapped
onto the agent role: a conductor calls its proxies as a client calls an agent)."""


def rows(table: MethodTable, side: str) -> set[tuple[str, str]]:
    return {(m.name, m.kind) for m in table.handled_by(side)}  # type: ignore[arg-type]


def test_the_stable_table_has_every_stable_v1_method() -> None:
    assert len(AGENT_METHODS) == 13
    assert len(CLIENT_METHODS) == 11
    assert set(PROTOCOL_METHODS) == {"$/cancel_request"}
    assert sum(m.is_request for m in METHODS) == 21
    assert METHODS == V1.methods
    assert all(m.stability == "stable" for m in METHODS)


def test_the_unstable_table_adds_exactly_the_unstable_methods_of_the_pinned_schema() -> None:
    added = [m for m in V1_UNSTABLE.methods if m not in V1.methods]
    assert all(m.stability == "unstable" for m in added)
    assert {m.name for m in added if m.handled_by == "agent" and m.is_request} == (
        UNSTABLE_AGENT_REQUESTS
    )
    assert rows(V1_UNSTABLE, "agent") - rows(V1, "agent") == {
        *((name, "request") for name in UNSTABLE_AGENT_REQUESTS),
        ("mcp/message", "notification"),
        ("proxy/successor", "notification"),
    }
    assert rows(V1_UNSTABLE, "client") - rows(V1, "client") == {
        ("auth/status_update", "notification"),
        ("mcp/message", "request"),
        ("proxy/successor", "request"),
        ("proxy/successor", "notification"),
    }
    assert V1_UNSTABLE.handled_by("both") == V1.handled_by("both")


def test_every_x_method_of_the_schema_has_a_row_with_its_stability(
    official_schema: dict[str, Any], official_unstable_schema: dict[str, Any]
) -> None:
    stable_defs = official_schema["$defs"]
    seen = set()
    for name, d in official_unstable_schema["$defs"].items():
        if "x-method" not in d or name.endswith("Response"):
            continue
        matching = [m for m in V1_METHODS if m.params_def == name]
        assert matching, f"no row for {name} ({d['x-method']})"
        for m in matching:
            assert m.name == d["x-method"]
            assert m.is_request == name.endswith("Request")
            expected = "stable" if stable_defs.get(name, {}).get("x-method") else "unstable"
            assert m.stability == expected, name
            side = {"protocol": "both"}.get(d["x-side"], d["x-side"])
            assert m.handled_by == side or d["x-side"] == "proxy"
            if m.is_request:
                assert m.result_def is not None
                assert official_unstable_schema["$defs"][m.result_def]["x-method"] == m.name
            seen.add(m)
    assert seen == set(V1_METHODS)


def test_the_stable_table_agrees_with_the_protocol_repositorys_meta_json() -> None:
    assert set(AGENT_METHODS) == META["agentMethods"]
    assert set(CLIENT_METHODS) == META["clientMethods"]
    assert set(PROTOCOL_METHODS) == META["protocolMethods"]


@pytest.mark.parametrize("table", [V1, V1_UNSTABLE], ids=["stable", "unstable"])
def test_every_agent_method_is_routed_to_an_agent_handler_and_nothing_else(
    table: MethodTable,
) -> None:
    router = build_router(Agent(), "agent", table)
    assert {(n, "request") for n in router.requests} | {
        (n, "notification") for n in router.notifications
    } == rows(table, "agent")
    for name, route in router.requests.items():
        spec = table.get(name, "agent")
        assert spec is not None and spec.is_request and route.params_type is spec.params


@pytest.mark.parametrize("table", [V1, V1_UNSTABLE], ids=["stable", "unstable"])
def test_every_client_method_is_routed_to_a_client_handler_and_nothing_else(
    table: MethodTable,
) -> None:
    router = build_router(Client(), "client", table)
    assert {(n, "request") for n in router.requests} | {
        (n, "notification") for n in router.notifications
    } == rows(table, "client")


def test_without_opting_in_no_unstable_method_is_routed() -> None:
    for side, handler in (("agent", Agent()), ("client", Client())):
        router = build_router(handler, side, V1)  # type: ignore[arg-type]
        for name in set(router.requests) | set(router.notifications):
            assert name in BY_NAME


@pytest.mark.parametrize(("peer", "side"), [(AgentPeer, "agent"), (ClientPeer, "client")])
def test_each_typed_peer_can_call_every_method_of_the_other_side(peer: type, side: str) -> None:
    assert peer.side == side
    for spec in V1_UNSTABLE.handled_by(side):  # type: ignore[arg-type]
        fn = getattr(peer, spec.python_name, None)
        assert fn is not None and inspect.iscoroutinefunction(fn), (
            f"{peer.__name__} lacks {spec.python_name}"
        )


def test_handler_bases_have_a_method_for_every_row_of_their_side() -> None:
    for side, base in (("agent", Agent), ("client", Client)):
        for spec in V1_UNSTABLE.handled_by(side):  # type: ignore[arg-type]
            assert inspect.iscoroutinefunction(getattr(base, spec.python_name)), spec


SENDER_GATED = {
    ("auth/status_update", "client"),
    ("mcp/message", "client"),
    ("mcp/message", "agent"),
}
"""Rows gated by a capability of the agent whatever side handles them: an agent that
advertises ``auth.status`` may send ``auth/status_update``; ``mcp/message`` flows only
when the agent took MCP servers over ACP (``mcpCapabilities.acp``)."""


def test_gated_methods_name_a_capability_of_the_side_that_handles_them_or_the_agent() -> None:
    for spec in V1_UNSTABLE.methods:
        if spec.gate is None:
            continue
        if (spec.name, spec.handled_by) in SENDER_GATED:
            assert spec.gate.advertised_by == "agent"
        else:
            assert spec.gate.advertised_by == spec.handled_by, spec.name


def test_every_gate_names_a_field_of_the_advertising_sides_capabilities() -> None:
    for spec in V1_UNSTABLE.methods:
        gate = spec.gate
        if gate is None:
            continue
        model: Any = s.AgentCapabilities if gate.advertised_by == "agent" else s.ClientCapabilities
        for part in gate.path.split("."):
            fields = {f.encode_name: f for f in msgspec.structs.fields(model)}
            assert part in fields, f"{spec.name}: {gate.path}"
            kinds = getattr(fields[part].type, "__args__", (fields[part].type,))
            model = next(k for k in kinds if isinstance(k, type) and k.__name__ != "UnsetType")
