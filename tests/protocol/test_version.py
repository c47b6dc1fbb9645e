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
        (2, {1, 2}, 2),
        (9, {1, 2}, 2),  # a newer client gets the newest served at or below its ask
        (0, {1, 2}, 1),  # below everything, with v1 served: v1's own answer
        (2, {1}, 1),  # a v1-only agent answers 1 to anything
        (0, {1}, 1),
        (5, {2}, 2),
    ],
)
def test_the_highest_version_served_at_or_below_the_request_is_chosen(
    requested: int, served: set[int], answer: int
) -> None:
    assert select_version(requested, served) == answer


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
