"""Version negotiation as plain functions (no I/O): which version an agent answers."""

from __future__ import annotations

import pytest

from acpwire.protocol.errors import ErrorCode, InvalidParams, UnsupportedProtocolVersion
from acpwire.protocol.version import (
    UNKNOWN_INFO,
    negotiate,
    requested_version,
    select_version,
    v2_initialize_params,
    v2_offer,
)


@pytest.mark.parametrize(
    ("requested", "served", "answer"),
    [
        (1, {1, 2}, 1),  # a v1 client of an agent serving both gets v1
        (2, {1, 2}, 2),  # the draft goes only to a client asking for exactly 2
        (9, {1, 2}, 1),  # a later version than the agent knows: the newest stable one
        (65535, {1, 2}, 1),
        (0, {1, 2}, 1),  # below everything, with v1 served: v1's own answer
        (2, {1}, 1),  # a v1-only agent answers 1 to anything
        (0, {1}, 1),
        (5, {2}, 2),  # a draft-only agent has nothing else to answer
    ],
)
def test_the_newest_stable_version_served_at_or_below_the_request_is_chosen(
    requested: int, served: set[int], answer: int
) -> None:
    """INIT-008, INIT-009, with the draft opt-in (a v1 client asking 65535 gets 1)."""
    assert select_version(requested, served) == answer


@pytest.mark.parametrize(("requested", "answer"), [(1, 1), (2, 2), (9, 2), (65535, 2), (0, 1)])
def test_an_agent_that_made_the_draft_its_default_answers_it_to_later_versions(
    requested: int, answer: int
) -> None:
    assert select_version(requested, {1, 2}, draft_default=True) == answer


def test_a_v2_only_agent_refuses_a_v1_client_with_the_versions_it_serves() -> None:
    with pytest.raises(UnsupportedProtocolVersion) as caught:
        select_version(1, {2})
    assert caught.value.code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION == -32022
    assert caught.value.data == {"requested": 1, "supported": [2]}


def test_the_v1_only_rule_is_unchanged() -> None:
    assert [negotiate(v) for v in (0, 1, 2, 99)] == [1, 1, 1, 1]


@pytest.mark.parametrize(
    "params", [{}, {"protocolVersion": "1"}, {"protocolVersion": 1 << 16}, [], None]
)
def test_a_version_that_is_not_a_uint16_is_invalid_params(params: object) -> None:
    with pytest.raises(InvalidParams):
        requested_version(params)


def test_a_later_versions_initialize_keeps_what_v2_reads_and_drops_the_rest() -> None:
    later = {"protocolVersion": 4, "info": {"name": 1}, "capabilities": "all", "x": 1}
    assert v2_initialize_params(later, 4) == {
        "protocolVersion": 2,
        "info": dict(UNKNOWN_INFO),
        "x": 1,
    }
    exact = {"protocolVersion": 2, "info": {"name": 1}}
    assert v2_initialize_params(exact, 2) == exact  # judged by the model, not patched


def test_the_v2_offer_carries_both_versions_fields() -> None:
    offer = v2_offer(
        {"protocolVersion": 2, "info": {"name": "c", "version": "1"}, "capabilities": {}},
        {"fs": {"readTextFile": True}},
        {"name": "c", "version": "1"},
    )
    assert offer == {
        "protocolVersion": 2,
        "info": {"name": "c", "version": "1"},
        "capabilities": {},
        "clientCapabilities": {"fs": {"readTextFile": True}},
        "clientInfo": {"name": "c", "version": "1"},
    }
