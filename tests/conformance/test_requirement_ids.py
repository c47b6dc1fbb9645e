"""The requirement table behind ``acp check``: every rule is checked by something, every
check cites known rules, and the ids agree with the workplace's full requirement list."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from acpwire.conformance import CHECKS, select_checks
from acpwire.conformance.registry import Group
from acpwire.conformance.requirements import (
    BY_ID,
    REQUIREMENTS,
    V2_REQUIREMENTS,
    parse_requirements,
    requirement,
)

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


def test_the_rules_file_is_checked_as_it_is_read() -> None:
    """requirements.json is data: a level, side or origin nobody knows, or an id listed
    twice, stops the checker from starting rather than becoming a rule."""
    rule = {"id": "X-1", "level": "MUST", "side": "agent", "source": "s", "text": "t."}
    assert parse_requirements(msgspec.json.encode([rule]))[0].origin == "spec"
    with pytest.raises(msgspec.ValidationError, match="level"):
        parse_requirements(msgspec.json.encode([{**rule, "level": "MAY"}]))
    with pytest.raises(msgspec.ValidationError, match="origin"):
        parse_requirements(msgspec.json.encode([{**rule, "origin": "rumour"}]))
    with pytest.raises(ValueError, match="X-1 twice"):
        parse_requirements(msgspec.json.encode([rule, rule]))


def test_a_check_cannot_be_declared_with_an_id_or_need_nobody_knows() -> None:
    """A declaration is checked where it is made: a typo in an id or a need stops the
    checker at import, instead of a check that proves nothing."""
    group = Group("agent", stage="main")
    assert group.check("ok", "a check", proves=("RPC-006",), needs=("turn",)).level == "MUST"
    with pytest.raises(ValueError, match="RPC-999"):
        group.check("typo", "a check", proves=("RPC-999",))
    with pytest.raises(ValueError, match="tunr"):
        group.check("typo", "a check", proves=("RPC-006",), needs=("tunr",))
    with pytest.raises(ValueError, match="proves no requirement"):
        group.check("none", "a check", proves=())
    assert [c.key for c in group.checks] == ["ok"]
