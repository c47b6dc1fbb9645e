"""``acp check --protocol 2``: the v2 draft's checks. acpwire's demo agent and the
TypeScript SDK's v2 agent pass them all; an agent that answers 1 gets ``n/a``; a v2
agent with a planted defect per rule fails each check with that rule's id."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire.conformance import CheckOptions, run_v2_checks

TESTS = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
ACP = [sys.executable, "-m", "acpwire.cli.main"]
DEMO = [sys.executable, "-m", "acpwire.demo", "--store", "memory:"]
RUN_BOUND = 2 * TIMEOUT
"""Bound of one whole ``acp check`` run: many waits, each a fraction of TIMEOUT."""

sys.path.insert(0, str(TESTS / "interop"))
import sdk_install  # noqa: E402


def check(*args: str, agent: list[str]) -> tuple[int, dict[str, object]]:
    out = subprocess.run(
        [*ACP, "check", "--json", "--protocol", "2", *args, "--", *agent],
        capture_output=True,
        text=True,
        timeout=RUN_BOUND,
    )
    assert out.returncode in (0, 1, 3), out.stderr
    return out.returncode, json.loads(out.stdout)


def statuses(report: dict[str, object]) -> dict[str, str]:
    return {r["check"]: r["status"] for r in report["results"]}  # type: ignore[index, union-attr]


def test_the_demo_agent_passes_every_v2_check() -> None:
    code, report = check("--prompt", "think hmm", "--slow-prompt", "slow 20", agent=DEMO)
    assert code == 0
    assert report["protocolVersion"] == 2
    assert report["agentInfo"]["name"] == "acpwire-demo"  # type: ignore[index]
    assert set(statuses(report).values()) == {"pass"}, report["results"]
    assert set(statuses(report)) == {
        "v2-negotiation",
        "v2-prompt-accepted",
        "v2-turn-states",
        "v2-message-ids",
        "v2-cancel",
        "v2-schema",
    }


def test_the_typescript_v2_agent_passes_every_v2_check() -> None:
    reason = sdk_install.ts_skip_reason()
    if reason:
        pytest.skip(reason)
    agent = [
        sdk_install.node_executable() or "node",
        str(sdk_install.PEERS_DIR / "ts_v2_agent.mjs"),
    ]
    code, report = check("--prompt", "echo hi\ntool", "--slow-prompt", "slow", agent=agent)
    assert code == 0
    assert set(statuses(report).values()) == {"pass"}, report["results"]


async def test_an_agent_that_answers_1_is_not_applicable(tmp_path: Path) -> None:
    agent = [sys.executable, str(TESTS / "client" / "toolkit_agent.py")]
    report = await run_v2_checks(CheckOptions(agent, timeout=RUN_BOUND, cwd=str(tmp_path)))
    assert report.protocol_version == 1
    assert {r.status for r in report.results} == {"n/a"}
    assert report.exit_code == 0


async def test_each_planted_v2_defect_fails_its_check_with_its_rule(tmp_path: Path) -> None:
    agent = [sys.executable, str(HERE / "v2_broken_agent.py")]
    report = await run_v2_checks(
        CheckOptions(agent, slow_prompt="slow", timeout=10, grace=3, cwd=str(tmp_path))
    )
    results = {r.check.key: r for r in report.results}
    assert results["v2-negotiation"].status == "pass"
    broken = {k: r.broken for k, r in results.items() if r.status == "fail"}
    assert broken == {
        "v2-prompt-accepted": ("V2-PROMPT-002",),
        "v2-turn-states": ("V2-PROMPT-003",),
        "v2-message-ids": ("V2-MSG-001",),
        "v2-cancel": ("V2-CANCEL-001",),
        "v2-schema": ("V2-SCHEMA-001",),
    }
    assert "colour" in results["v2-schema"].detail
    assert report.exit_code == 1
