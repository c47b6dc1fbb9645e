"""``acp check`` on a corpus of agents: every planted defect is flagged, at the level of the
rule it breaks, and nothing else fails; agents that are unusual but correct fail nothing.

Each broken agent (``broken/*.py``) is the correct base agent with one defect; its ``FAILS``
names the checks that must fail and the requirement ids each must report. The corpus
covers every requirement id the agent checks cite.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _corpus import BASE, BROKEN, CORRECT, Corpus, declared, expected_failures, failures

from acpwire.conformance import checks_for


@pytest.fixture(scope="module")
def corpus() -> Iterator[Corpus]:
    runner = Corpus.of([BASE, *BROKEN, *CORRECT])
    runner.start()
    yield runner
    runner.join()


@pytest.mark.timeout(600)
def test_the_corpus_base_agent_passes_every_check(corpus: Corpus) -> None:
    report = corpus.report(BASE)
    assert {r.check.key: r.status for r in report.results if r.status != "pass"} == {}
    assert report.exit_code == 0


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", BROKEN, ids=lambda p: p.stem)
def test_a_planted_defect_is_flagged_and_nothing_else_fails(corpus: Corpus, path: Path) -> None:
    report = corpus.report(path)
    assert failures(report) == expected_failures(path), report.to_json()
    must = any(r.level == "MUST" for r in report.results if r.status == "fail")
    assert report.exit_code == declared(path, "EXIT", 1 if must else 0)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("path", CORRECT, ids=lambda p: p.stem)
def test_an_unusual_but_correct_agent_fails_nothing(corpus: Corpus, path: Path) -> None:
    """A corpus file may also declare ``NOTES`` and ``BLOCKED``: words the report's notes,
    and its reason for stopping at authentication, must contain."""
    report = corpus.report(path)
    assert failures(report) == expected_failures(path) == {}, report.to_json()
    assert report.exit_code == declared(path, "EXIT", 0)
    for words in declared(path, "NOTES", ()):
        assert any(words in note for note in report.notes), (words, report.notes)
    for words in declared(path, "BLOCKED", ()):
        assert words in (report.blocked or ""), (words, report.blocked)


def test_every_requirement_the_agent_checks_cite_has_a_planted_defect() -> None:
    cited = {rid for check in checks_for("agent") for rid in check.ids}
    planted = {rid for path in BROKEN for ids in expected_failures(path).values() for rid in ids}
    assert cited - planted == set()
    assert planted <= cited


def test_every_agent_check_is_failed_by_some_broken_agent() -> None:
    failing = {key for path in BROKEN for key in expected_failures(path)}
    assert {c.key for c in checks_for("agent")} - failing == set()
