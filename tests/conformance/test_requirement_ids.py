"""The requirement table behind ``acp check``: every rule is checked by something, every
check cites known rules, and the ids agree with the workplace's full requirement list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acpwire.testing.conformance import CHECKS, select_checks
from acpwire.testing.requirements import BY_ID, REQUIREMENTS, requirement

SPEC = Path(__file__).resolve().parents[2].parent / "shared" / "spec" / "requirements.json"


def test_every_requirement_is_checked_and_every_check_cites_known_requirements() -> None:
    cited = {rid for check in CHECKS for rid in check.ids}
    assert cited <= set(BY_ID), cited - set(BY_ID)
    assert set(BY_ID) <= cited, set(BY_ID) - cited


def test_ids_are_unique_and_sentences_short() -> None:
    assert len(BY_ID) == len(REQUIREMENTS)
    assert len({c.key for c in CHECKS}) == len(CHECKS)
    for r in REQUIREMENTS:
        assert r.text.endswith(".") and len(r.text) < 160, r.id
        assert r.source


def test_every_spec_id_exists_in_the_full_requirement_list_with_the_same_level() -> None:
    if not SPEC.is_file():
        pytest.skip(f"full requirement list not found at {SPEC}")
    full = {r["id"]: r for r in json.loads(SPEC.read_text())["requirements"]}
    spec = [r for r in REQUIREMENTS if r.origin == "spec"]
    missing = [r.id for r in spec if r.id not in full]
    assert missing == []
    for r in spec:
        assert full[r.id]["level"] == r.level, r.id
        assert full[r.id]["side"] == r.side, r.id


def test_only_accepts_check_names_and_requirement_ids() -> None:
    assert select_checks(["cancel"]) == {"cancel"}
    assert select_checks(["INIT-009"]) == {"version-newer", "version-unknown"}
    assert select_checks(["rpc-006", " schema "]) == {"unknown-method", "schema"}
    with pytest.raises(ValueError, match="NOPE-1"):
        select_checks(["NOPE-1"])
    assert requirement("RPC-006").level == "MUST"


def test_acpwire_expectations_are_marked_apart_from_the_spec_rules() -> None:
    """SANDBOX-* and CLIENT-* are acpwire's expectations of clients, not ACP's rules."""
    for r in REQUIREMENTS:
        family = r.id.split("-")[0]
        if family == "SANDBOX":
            assert (r.origin, r.side) == ("security", "client"), r.id
            assert r.source.startswith("docs/security.md"), r.id
        elif family == "CLIENT":
            assert (r.origin, r.side) == ("project", "client"), r.id
        else:
            assert r.origin == "spec", r.id


def test_only_selects_client_checks_by_name_id_or_kind() -> None:
    assert select_checks(["SANDBOX-001", "client-order"]) == {"fs-dotdot", "client-order"}
    assert select_checks(["client"]) == {c.key for c in CHECKS if c.target == "client"}
