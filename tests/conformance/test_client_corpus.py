"""``acp check --client`` on a corpus of clients: every planted defect is flagged, at the
level of the rule it breaks, and nothing else fails; the correct base client fails nothing.

``clients/_client.py`` is a correct one-shot client (standard library only) and runs every
scenario. Each other file in ``clients/`` plants one defect in it and names, in ``FAILS``,
the checks that must fail and the requirement ids each must report (``ALSO``: checks
whose scenarios provoke a defect that only the recording shows). Each runs the scenarios
of those checks, plus the baseline, so that the corpus stays fast on two cores; together
they cover every requirement id the client checks cite.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _corpus import Corpus, Job, declared, expected_failures, failures

from acpwire.conformance import ClientCheckOptions, Wire, checks_for, run_client_checks
from acpwire.testing.strict import StrictValidator

CLIENTS = Path(__file__).resolve().parent / "clients"
BASE = CLIENTS / "_client.py"
BROKEN = sorted(p for p in CLIENTS.glob("*.py") if not p.name.startswith("_"))
TEST_OPTIONS: dict[str, Any] = {
    "timeout": 8.0,
    "quick_timeout": 3.0,
    "grace": 3.0,
    "slow_initialize": 3.0,
    "oversize_bytes": 2_000_000,
    "huge_bytes": 500_000,
    "stderr_flood_bytes": 1_000_000,
    "terminal_flood_bytes": 2_000_000,
    "concurrency": 4,
}
"""Short timeouts and small sizes: the corpus client reads lines of up to 1 MiB and
answers within milliseconds unless its defect says otherwise."""


def client_command(path: Path) -> str:
    return (
        f"{shlex.quote(sys.executable)} {shlex.quote(str(path))} --prompt {{prompt}} -- {{agent}}"
    )


def options_for(path: Path) -> ClientCheckOptions:
    if path == BASE:
        return ClientCheckOptions(client_command(path), **TEST_OPTIONS)
    only = frozenset(expected_failures(path)) | frozenset(declared(path, "ALSO", []))
    return ClientCheckOptions(client_command(path), only=only, **TEST_OPTIONS)


BASE_WIRE = Wire()
"""The recording of the base client's run (every scenario), for the schema test below."""
HOSTILE_SCENARIOS = {"garbage", "unknown-updates"}
"""Scenarios whose agent sends what the schema forbids, on purpose."""


def job(path: Path) -> Job:
    options = options_for(path)
    return lambda: run_client_checks(options, BASE_WIRE if path == BASE else None)


@pytest.fixture(scope="module")
def corpus() -> Iterator[Corpus]:
    runner = Corpus({p: job(p) for p in [BASE, *BROKEN]})
    runner.start()
    yield runner
    runner.join()


@pytest.mark.timeout(600)
def test_the_corpus_base_client_passes_every_check(corpus: Corpus) -> None:
    report = corpus.report(BASE)
    assert {r.check.key: (r.status, r.detail) for r in report.results if r.status != "pass"} == {}
    assert len(report.results) == len(checks_for("client"))
    assert report.exit_code == 0


@pytest.mark.timeout(600)
def test_what_the_scripted_agent_sends_is_valid_unless_hostile_on_purpose(corpus: Corpus) -> None:
    corpus.report(BASE)
    problems: list[str] = []
    checked = 0
    for scenario in sorted({e.process for e in BASE_WIRE.entries} - HOSTILE_SCENARIOS):
        validator = StrictValidator()
        for e in BASE_WIRE.of(scenario):
            m = e.message
            if m is None:
                continue
            if e.direction == "to_agent":
                validator.note_request(m)
                continue
            if m.get("method") == "acp_check/no_such_method":
                continue  # an unknown method, sent to be refused
            checked += 1
            assert m.get("jsonrpc") == "2.0"
            problems += [
                f"[{scenario}] {m.get('method') or 'answer'} {p}" for p in validator.validate(m)
            ]
    assert problems == []
    assert checked > 100


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_a_planted_client_defect_is_flagged_and_nothing_else_fails(
    corpus: Corpus, path: Path
) -> None:
    report = corpus.report(path)
    found = {key: set(ids) for key, ids in failures(report).items()}
    assert found == {key: set(ids) for key, ids in expected_failures(path).items()}, [
        (r.check.key, r.status, r.detail) for r in report.results if r.status != "pass"
    ]
    must = any(r.level == "MUST" for r in report.results if r.status == "fail")
    assert report.exit_code == declared(path, "EXIT", 1 if must else 0)


def test_every_requirement_the_client_checks_cite_has_a_planted_defect() -> None:
    cited = {rid for check in checks_for("client") for rid in check.ids}
    planted = {rid for path in BROKEN for ids in expected_failures(path).values() for rid in ids}
    assert cited - planted == set()
    assert planted <= cited


def test_every_client_check_is_failed_by_some_broken_client() -> None:
    failing = {key for path in BROKEN for key in expected_failures(path)}
    assert {c.key for c in checks_for("client")} - failing == set()
