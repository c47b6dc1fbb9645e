"""docs/check.md lists every check (agent and endpoint tables) with its requirement ids,
level and needs, as the code has them."""

from __future__ import annotations

import re
from pathlib import Path

from acpwire.conformance import CHECKS, NEEDS

DOC = Path(__file__).resolve().parents[2] / "docs" / "check.md"
ROW = re.compile(r"^\| `([a-z0-9-]+)` \| (MUST|SHOULD) \| ([A-Z0-9, -]+) \| ([^|]+) \| [^|]+ \|$")


def documented() -> dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]]:
    text = DOC.read_text(encoding="utf-8")
    tables = [s.split("\n### ", 1)[0] for s in text.split("### Every ")[1:]]
    rows: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {}
    for line in "\n".join(tables).splitlines():
        m = ROW.match(line)
        if m:
            key, level, ids, needs = m.groups()
            assert key not in rows, f"{key} listed twice"
            rows[key] = (
                level,
                tuple(i.strip() for i in ids.split(",")),
                tuple(n.strip() for n in needs.split(",")) if needs.strip() != "—" else (),
            )
    return rows


def test_every_check_is_documented_with_its_ids_level_and_needs() -> None:
    assert documented() == {c.key: (c.level, c.ids, c.needs) for c in CHECKS}


def test_every_need_is_explained() -> None:
    text = DOC.read_text(encoding="utf-8")
    used = {need for check in CHECKS for need in check.needs}
    assert used <= set(NEEDS)
    for need in NEEDS:
        assert f"| `{need}` |" in text, need


def test_reports_list_the_checks_in_the_order_of_the_docs() -> None:
    """A report lists results in catalogue order (the groups in turn, each check where it
    is declared); the tables read in the same order, so a report reads like the docs."""
    assert list(documented()) == [c.key for c in CHECKS]
