"""One method table, and every method routed on the right side."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from acpwire.agent.connection import Agent, ClientPeer
from acpwire.client.connection import AgentPeer, Client
from acpwire.engine.roles import build_router
from acpwire.schema.methods import AGENT_METHODS, BY_NAME, CLIENT_METHODS, METHODS, PROTOCOL_METHODS

META = Path(__file__).resolve().parents[3] / "shared" / "acp-schema" / "v1" / "meta.json"


def test_the_table_has_every_stable_v1_method() -> None:
    assert len(AGENT_METHODS) == 13
    assert len(CLIENT_METHODS) == 11
    assert set(PROTOCOL_METHODS) == {"$/cancel_request"}
    assert sum(m.is_request for m in METHODS) == 21


def test_the_table_agrees_with_the_protocol_repositorys_meta_json() -> None:
    if not META.is_file():
        pytest.skip(f"{META} not present")
    meta = json.loads(META.read_text())
    assert set(meta["agentMethods"].values()) == set(AGENT_METHODS)
    assert set(meta["clientMethods"].values()) == set(CLIENT_METHODS)
    assert set(meta["protocolMethods"].values()) == set(PROTOCOL_METHODS)


def test_every_agent_method_is_routed_to_an_agent_handler_and_nothing_else() -> None:
    router = build_router(Agent(), "agent")
    assert set(router.requests) | set(router.notifications) == set(AGENT_METHODS)
    for name, route in router.requests.items():
        assert BY_NAME[name].is_request and route.params_type is BY_NAME[name].params
    assert set(router.notifications) == {"session/cancel"}


def test_every_client_method_is_routed_to_a_client_handler_and_nothing_else() -> None:
    router = build_router(Client(), "client")
    assert set(router.requests) | set(router.notifications) == set(CLIENT_METHODS)
    assert set(router.notifications) == {"session/update", "elicitation/complete"}


@pytest.mark.parametrize(
    ("peer", "methods"), [(AgentPeer, AGENT_METHODS), (ClientPeer, CLIENT_METHODS)]
)
def test_each_typed_peer_can_call_every_method_of_the_other_side(peer: type, methods: dict) -> None:
    for spec in methods.values():
        fn = getattr(peer, spec.python_name, None)
        assert fn is not None and inspect.iscoroutinefunction(fn), (
            f"{peer.__name__} lacks {spec.python_name}"
        )


def test_gated_methods_name_a_capability_of_the_side_that_handles_them() -> None:
    for spec in METHODS:
        if spec.gate is not None:
            assert spec.gate.advertised_by == spec.handled_by
