"""The requirement table behind ``acp check``: every rule is checked by something, every
check cites known rules, and the ids agree with the workplace's full requirement list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acpwire.testing.conformance import CHECKS, select_checks
from acpwire.testing.requirements import BY_ID, REQUIREMENTS, V2_REQUIREMENTS, requirement

ALL = (*REQUIREMENTS, *V2_REQUIREMENTS)

SPEC = Path(__file__).resolve().with_name("spec_requirement_ids.json")
"""The ids of the full requirement list, with level and side, shipped with the tests."""


def test_every_requirement_is_checked_and_every_check_cites_known_requirements() -> None:
    cited = {rid for check in CHECKS for rid in check.ids}
    assert cited <= set(BY_ID), cited - set(BY_ID)
    assert set(BY_ID) <= cited, set(BY_ID) - cited


def test_ids_are_unique_and_sentences_short() -> None:
    assert len(BY_ID) == len(ALL)
    assert len({c.key for c in CHECKS}) == len(CHECKS)
    for r in ALL:
        assert r.text.endswith(".") and len(r.text) < 160, r.id
        assert r.source


def test_every_spec_id_exists_in_the_full_requirement_list_with_the_same_level() -> None:
    full: dict[str, list[str]] = json.loads(SPEC.read_text())["requirements"]
    spec = [r for r in REQUIREMENTS if r.origin == "spec"]
    missing = [r.id for r in spec if r.id not in full]
    assert missing == []
    for r in spec:
        assert full[r.id] == [r.level, r.side], r.id


def test_rules_from_outside_the_v1_spec_say_where_they_come_from() -> None:
    """RFD-*, SEC-*, SSE-*, SANDBOX-*, CLIENT-*, VERSION-*, JSONRPC-* and the v2 draft's
    V2-* are marked apart from ACP v1's own rules."""
    kinds = {
        ("rfd", "server"): ("RFD-HTTP-", "RFD-WS-", "RFD-DUR-"),
        ("security", "server"): ("SEC-",),
        ("web", "server"): ("SSE-",),
        ("security", "client"): ("SANDBOX-",),
        ("project", "client"): ("CLIENT-",),
        ("project", "agent"): ("VERSION-",),
        ("jsonrpc", "agent"): ("JSONRPC-",),
        ("draft", "agent"): ("V2-",),
    }
    outside = tuple(p for prefixes in kinds.values() for p in prefixes)
    for r in ALL:
        if r.origin == "spec":
            assert not r.id.startswith(outside), r.id
            continue
        assert r.id.startswith(kinds[(r.origin, r.side)]), r.id
        if r.origin == "rfd":
            rfd = (
                "durable-resumable-http-transport "
                if r.id.startswith("RFD-DUR-")
                else ("streamable-http-websocket-transport: ")
            )
            assert r.source.startswith("RFD " + rfd), r.id
        if r.origin == "security":
            assert r.source.startswith("docs/security.md"), r.id
        if r.origin == "draft":
            assert r.source.startswith("docs/protocol/v2/draft/"), r.id
    assert {r.origin for r in V2_REQUIREMENTS} == {"draft"}


def test_only_accepts_check_names_and_requirement_ids() -> None:
    assert select_checks(["cancel"]) == {"cancel"}
    assert select_checks(["INIT-009"]) == {"version-newer", "version-unknown"}
    assert select_checks(["rpc-006", " schema "]) == {"unknown-method", "schema"}
    with pytest.raises(ValueError, match="NOPE-1"):
        select_checks(["NOPE-1"])
    assert requirement("RPC-006").level == "MUST"
    assert select_checks(["endpoint"]) == {c.key for c in CHECKS if c.target == "endpoint"}
    assert select_checks(["RFD-WS-003"]) == {"ws-binary"}


def test_only_selects_client_checks_by_name_id_or_kind() -> None:
    assert select_checks(["SANDBOX-001", "client-order"]) == {"fs-dotdot", "client-order"}
    assert select_checks(["client"]) == {c.key for c in CHECKS if c.target == "client"}
