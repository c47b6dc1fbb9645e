"""The checks over a recording judge the real agents' captures rightly: no MUST failure.

claude-agent-acp and gemini-cli (``tests/captures``) answer unknown methods, a line that
is not JSON (-32700, id null) and a batch (-32600, id null) as they should; those null-id
answers are not answers to notifications.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from acpwire.conformance import checks_for, judge_wire, load_capture
from acpwire.conformance.report import Verdicts

CAPTURES = [
    "claude-agent-acp",
    "claude-agent-acp.minimal-caps",
    "claude-agent-acp.probe",
    "gemini-cli",
    "gemini-cli.minimal-caps",
    "gemini-cli.probe",
    "ts-sdk-agent.full",
]


def judged(path: Path) -> dict[str, tuple[str, str, str]]:
    verdicts = Verdicts(checks_for("agent"))
    judge_wire(load_capture(path), verdicts)
    return {
        r.check.key: (r.status, r.level, r.detail)
        for r in verdicts.ordered()
        if r.check.stage == "wire"
    }


@pytest.mark.parametrize("name", CAPTURES)
def test_no_must_failure_on_a_real_agents_capture(captures_dir: Path, name: str) -> None:
    results = judged(captures_dir / f"{name}.jsonl")
    assert {k: v for k, v in results.items() if v[0] == "fail" and v[1] == "MUST"} == {}
    for key in ("stdout-clean", "envelope", "schema", "capabilities", "custom-fields", "responses"):
        assert results[key][0] == "pass", key


def test_null_id_answers_to_bad_input_are_not_answers_to_notifications(captures_dir: Path) -> None:
    results = judged(captures_dir / "claude-agent-acp.probe.jsonl")
    assert results["notification-unanswered"][0] == "pass"


def test_a_capture_is_judged_on_what_it_shows(captures_dir: Path) -> None:
    """The full capture has tool calls, terminals and permissions; its agent was told to read
    a file outside the session folder, which fs-roots reports (a SHOULD)."""
    results = judged(captures_dir / "ts-sdk-agent.full.jsonl")
    for key in ("terminals-released", "terminal-ids", "tool-call-ids", "permission-options"):
        assert results[key][0] == "pass", key
    assert results["fs-roots"][:2] == ("fail", "SHOULD")
    assert "/etc/hostname" in results["fs-roots"][2]
