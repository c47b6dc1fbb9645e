"""``acp check --url`` on a corpus of endpoints: a correct one fails nothing but HTTP/2 (it
runs under uvicorn, which speaks HTTP/1.1 only), and each planted defect is flagged by
exactly the checks it breaks, with their rule ids, while everything else passes.

The endpoints are :class:`_standin.StandIn` (the RFD's current one-stream model, with
event ids, a cookie and keepalives) with one defect each, checked side by side.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest
from _corpus import Corpus, Job, failures
from _standin import DEFECTS, TOKEN, TOKEN2, StandIn, serve_asgi

from acpwire.conformance import CheckOptions, EndpointTarget, Report, checks_for, run_checks

ENDPOINT_CHECKS = frozenset(c.key for c in checks_for("endpoint"))
UVICORN = {"http2": ("RFD-HTTP-012",)}
"""What every endpoint served by uvicorn fails."""
TEST_OPTIONS = {"timeout": 10.0, "quick_timeout": 5.0, "grace": 3.0}
"""Timeouts that a loaded machine meets: each run is a server, an agent and a checker
in one event loop, several runs at once."""
CONCURRENCY = 4
KEEPALIVE_WAIT = 1.5
"""Seconds of silence allowed on an idle stream; the stand-in sends a keepalive every 0.3 s."""

FAILS: dict[str, dict[str, tuple[str, ...]]] = {
    "no-auth": {"auth-required": ("SEC-001",)},
    "any-token": {"auth-invalid-token": ("SEC-002",)},
    "no-challenge": {"auth-challenge": ("SEC-003",)},
    "any-origin": {"foreign-origin": ("SEC-004",)},
    "any-host": {"rebinding-host": ("SEC-005",)},
    "shared-connections": {"principal-connections": ("SEC-006",)},
    "shared-sessions": {"principal-sessions": ("SEC-007",)},
    "owner-locked": {"reattach": ("SEC-008",)},
    "counter-ids": {"connection-ids": ("SEC-009",)},
    "no-body-limit": {"body-limit": ("SEC-010",)},
    "init-no-header": {"http-initialize": ("RFD-HTTP-001",)},
    "accepted-200": {"http-accepted": ("RFD-HTTP-002",)},
    "stream-as-text": {"http-stream": ("RFD-HTTP-003",)},
    "no-415": {"http-content-type": ("RFD-HTTP-005",)},
    "no-406": {"http-accept": ("RFD-HTTP-006",)},
    "missing-id-404": {"http-missing-connection": ("RFD-HTTP-007",)},
    "unknown-id-400": {"http-unknown-connection": ("RFD-HTTP-008",)},
    "no-session-header": {"http-session-header": ("RFD-HTTP-009",)},
    "batch-400": {"http-batch": ("RFD-HTTP-010",)},
    "session-streams": {"http-routing": ("RFD-HTTP-004",)},
    "delete-keeps-stream": {"http-delete": ("RFD-HTTP-011",)},
    "bad-cookie": {"cookies": ("RFD-HTTP-013",)},
    "resume-repeats": {"stream-resume": ("RFD-HTTP-014",), "cursor-replay": ("RFD-DUR-002",)},
    "no-cursor": {"cursor-every-message": ("RFD-DUR-001",)},
    "replay-new-cursors": {"cursor-replay": ("RFD-DUR-002",)},
    "unknown-cursor-live": {"cursor-unknown": ("RFD-DUR-003",)},
    "no-keepalive": {"stream-keepalive": ("SSE-001",)},
    "ws-no-id": {"ws-upgrade": ("RFD-WS-001",)},
    "ws-binary-frames": {"ws-messages": ("RFD-WS-002",)},
    "ws-answers-binary": {"ws-binary": ("RFD-WS-003",)},
}
"""Each defect of the stand-in and the checks (with the rule ids) that must flag it."""


def check_standin(*defects: str) -> Job:
    async def job() -> Report:
        with tempfile.TemporaryDirectory() as folder:
            app = StandIn(*defects, store=os.path.join(folder, "sessions.sqlite3"))
            async with serve_asgi(app) as url:
                target = EndpointTarget(
                    url, token=TOKEN, token2=TOKEN2, keepalive_wait=KEEPALIVE_WAIT
                )
                options = CheckOptions(endpoint=target, only=ENDPOINT_CHECKS, **TEST_OPTIONS)
                return await run_checks(options)

    return job


def why(report: Report) -> list[str]:
    """What each failed check said (shown when a test fails)."""
    return [f"{r.check.key}: {r.detail}" for r in report.results if r.status == "fail"]


@pytest.fixture(scope="module")
def corpus() -> Iterator[Corpus]:
    jobs = {(): check_standin(), **{(d,): check_standin(d) for d in DEFECTS}}
    runner = Corpus(jobs, CONCURRENCY)
    runner.start()
    yield runner
    runner.join()


def test_a_correct_endpoint_passes_every_endpoint_check_but_http2_under_uvicorn(
    corpus: Corpus,
) -> None:
    report = corpus.report(())
    assert failures(report) == UVICORN, why(report)
    assert {r.check.key: r.status for r in report.results if r.status != "pass"} == {
        "http2": "fail"
    }
    assert report.exit_code == 1


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_a_planted_endpoint_defect_is_flagged_by_its_checks_and_nothing_else(
    corpus: Corpus, defect: str
) -> None:
    report = corpus.report((defect,))
    assert failures(report) == {**UVICORN, **FAILS[defect]}, why(report)


def test_every_endpoint_check_catches_a_planted_defect() -> None:
    assert set(FAILS) == set(DEFECTS)
    caught = {key for fails in FAILS.values() for key in fails} | set(UVICORN)
    assert ENDPOINT_CHECKS - caught == set()
