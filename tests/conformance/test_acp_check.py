"""``acp check`` against real agents over stdio, and the command's reports and exit status.

acpwire's own agents and agents built on the official SDKs fail no MUST check; the
command prints a table, JSON or JUnit XML and exits 0, 1, 3 or 2 as documented.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _corpus import TEST_OPTIONS, Corpus
from waiting import TIMEOUT

from acpwire.conformance import CHECKS, CheckOptions, Report, run_checks

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
HERE = Path(__file__).resolve().parent
BANNER_AGENT = [sys.executable, str(HERE / "broken" / "banner.py")]
AUTH_AGENT = [sys.executable, str(HERE / "correct" / "needs_authentication.py")]
BASE_AGENT = [sys.executable, str(HERE / "broken" / "_agent.py")]
ACP = [sys.executable, "-m", "acpwire.cli.main"]
RUN_BOUND = 2 * TIMEOUT
"""Bound of one whole ``acp check`` run: many waits, each a fraction of TIMEOUT."""

sys.path.insert(0, str(TESTS / "interop"))
import sdk_install  # noqa: E402


def statuses(report: Report) -> dict[str, str]:
    return {r.check.key: r.status for r in report.results}


def _real_agents(tmp: Path) -> dict[str, CheckOptions]:
    """acpwire's agents and the official SDKs' (when installed), with prompts they know."""
    work = tmp / "tool-agent"
    work.mkdir()
    (work / "notes.txt").write_text("one\ntwo\n")
    # Real agents stop the way the engine does: answers get EOF_GRACE (1 s) after stdin
    # closes, then a store is flushed; 2 s for all of it was too short on a loaded machine
    # (shutdown-turn failed on the demo agent when two suites ran at once). The SDK agents
    # take 2-3 s to import alone on a 2-core machine, several times that with six agents
    # starting at once, so answers that take work get 30 s (only a broken agent waits it out).
    options = {**TEST_OPTIONS, "grace": 4.0, "timeout": 30.0}
    fast = {**options, "tool_prompts": (), "slow_prompt": None}
    agents: dict[str, CheckOptions] = {
        "demo": CheckOptions(
            [sys.executable, "-m", "acpwire.demo", "--store", str(tmp / "demo.sqlite3")],
            **{
                **options,
                "slow_prompt": "slow 30",
                "tool_prompts": ("write acp-check.txt hello", "run echo hi", "read acp-check.txt"),
            },
        ),
        "echo example": CheckOptions(
            [sys.executable, str(ROOT / "examples" / "echo_agent.py")], **fast
        ),
        "tool example": CheckOptions(
            [sys.executable, str(ROOT / "examples" / "tool_agent.py")],
            **{**fast, "prompt": "notes.txt", "tool_prompts": ("notes.txt",), "cwd": str(work)},
        ),
        "engine test agent": CheckOptions(
            [sys.executable, str(TESTS / "engine" / "agent_program.py")],
            **{**options, "tool_prompts": ()},
        ),
    }
    sdk_prompts = {**options, "tool_prompts": ("write acp-check.txt hello\nrun echo hi",)}
    if sdk_install.ts_skip_reason() is None:
        agents["TypeScript SDK agent"] = CheckOptions(sdk_install.ts_agent_command(), **sdk_prompts)
    if sdk_install.py_sdk_skip_reason() is None:
        agents["Python SDK agent"] = CheckOptions(sdk_install.pysdk_agent_command(), **sdk_prompts)
    return agents


@pytest.fixture(scope="module")
def real_agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    runner = Corpus(_real_agents(tmp_path_factory.mktemp("agents")))
    runner.start()
    yield runner
    runner.join()


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "name",
    [
        "demo",
        "echo example",
        "tool example",
        "engine test agent",
        "TypeScript SDK agent",
        "Python SDK agent",
    ],
)
def test_acpwire_and_sdk_agents_fail_no_must_check(real_agents: Corpus, name: str) -> None:
    if name not in real_agents.jobs:
        pytest.skip(f"{name}: SDK not installed here")
    report = real_agents.report(name)
    assert {r.check.key: r.detail for r in report.failed_must} == {}
    assert report.exit_code == 0
    got = statuses(report)
    # The checks ran: a turn was judged and the recording was read.
    assert got["prompt"] == "pass"
    assert got["schema"] == "pass"
    assert got["stdout-clean"] == "pass"


@pytest.mark.timeout(600)
def test_the_demo_agent_is_checked_all_the_way(real_agents: Corpus) -> None:
    got = statuses(real_agents.report("demo"))
    for key in (
        "cancel",
        "cancel-request",
        "session-load",
        "session-list",
        "set-mode",
        "set-config-option",
        "terminals-released",
        "absolute-paths",
        "fs-roots",
        "shutdown-turn",
        "mcp-connect",
        "request-during-turn",
        "version-newer",
        "version-draft",
    ):
        assert got[key] == "pass", key


async def test_cancel_checks_skip_without_a_slow_prompt() -> None:
    report = await run_checks(
        CheckOptions(BASE_AGENT, only=frozenset({"cancel", "prompt"}), timeout=10)
    )
    assert statuses(report) == {"prompt": "pass", "cancel": "skip"}
    assert "--slow-prompt" in report.results[-1].detail


async def test_a_missing_agent_fails_initialize() -> None:
    report = await run_checks(
        CheckOptions(["/nonexistent/agent-binary"], only=frozenset({"initialize"}))
    )
    assert statuses(report) == {"initialize": "fail"}
    assert report.exit_code == 1


async def test_an_agent_that_exits_at_once_fails_initialize_alone() -> None:
    # One defect, one failure: the version probes do not fail for the same silence.
    report = await run_checks(CheckOptions([sys.executable, "-c", "pass"], **TEST_OPTIONS))
    must_failures = {
        r.check.key for r in report.results if r.status == "fail" and r.level == "MUST"
    }
    assert must_failures == {"initialize"}
    got = statuses(report)
    assert got["version-newer"] == got["version-unknown"] == "skip"
    assert report.exit_code == 1


def acp(
    *args: str, cwd: Path | None = None, columns: int = 200
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run(
        [*ACP, *args],
        capture_output=True,
        text=True,
        timeout=RUN_BOUND,
        env=env,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
    )


FAST = ("--timeout", "10", "--quick-timeout", "3", "--grace", "2")


def test_cli_table_json_junit_and_exit_status_of_a_broken_agent(tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    only = ("--only", "TRANS-004,INIT-009,prompt")
    table = acp("check", *FAST, *only, "--junit", str(junit), "--", *BANNER_AGENT)
    assert table.returncode == 1, table.stderr
    assert table.stderr == ""
    row = next(line for line in table.stdout.splitlines() if "stdout-clean" in line)
    assert "fail" in row and "MUST" in row and "TRANS-004" in row
    assert "corpus agent 1.0 starting up" in table.stdout

    suite = ET.parse(junit).getroot()
    assert suite.tag == "testsuite" and suite.get("failures") == "1"
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert len(cases) == 4
    failure = cases["stdout-clean [TRANS-001, TRANS-003, TRANS-004]"].find("failure")
    assert failure is not None and failure.get("type") == "MUST"
    assert "TRANS-004" in (failure.text or "")
    assert cases["prompt [PROMPT-003, PROMPT-005]"].find("failure") is None

    as_json = acp("check", "--json", *FAST, *only, "--", *BANNER_AGENT)
    assert as_json.returncode == 1
    data: dict[str, Any] = json.loads(as_json.stdout)
    assert {r["check"]: r["status"] for r in data["results"]} == {
        "version-newer": "pass",
        "version-unknown": "pass",
        "stdout-clean": "fail",
        "prompt": "pass",
    }
    failed = next(r for r in data["results"] if r["status"] == "fail")
    assert failed["broken"] == ["TRANS-004"] and failed["level"] == "MUST"
    assert data["failedMust"] == ["stdout-clean"] and data["exitCode"] == 1


def test_cli_table_into_a_pipe_is_plain_lines_with_every_detail_whole() -> None:
    only = ("--only", "TRANS-004,INIT-009")
    detail = next(
        r["detail"]
        for r in json.loads(acp("check", "--json", *FAST, *only, "--", *BANNER_AGENT).stdout)[
            "results"
        ]
        if r["check"] == "stdout-clean"
    )
    assert len(detail) > 40
    # a narrow terminal size in the environment must not matter: stdout is a pipe
    table = acp("check", *FAST, *only, "--", *BANNER_AGENT, columns=40)
    assert table.returncode == 1
    lines = table.stdout.splitlines()
    assert lines[0] == "acp check: corpus-agent 1.0 (protocol 1)"
    row = next(line for line in lines if " stdout-clean " in line)
    assert row.split()[:3] == ["fail", "MUST", "stdout-clean"]
    assert row.endswith(detail)
    assert all(line == line.rstrip() for line in lines)
    assert not any(set(line) <= set("━─-═ ") for line in lines if line)  # no rules drawn
    assert lines[-1].startswith("2 passed, 1 failed (1 MUST), 0 skipped")


def test_cli_exits_0_for_a_passing_agent_and_3_when_blocked_by_authentication() -> None:
    good = acp("check", *FAST, "--only", "initialize,schema", "--", *BASE_AGENT)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "INIT-008" in good.stdout and "pass" in good.stdout

    blocked = acp("check", "--json", *FAST, "--", *AUTH_AGENT)
    assert blocked.returncode == 3, blocked.stdout
    data = json.loads(blocked.stdout)
    assert "session/new answered -32000" in data["blockedByAuthentication"]
    assert "token" in data["blockedByAuthentication"]
    assert data["counts"]["fail"] == 0

    unlocked = acp("check", *FAST, "--auth-method", "token", "--", *AUTH_AGENT)
    assert unlocked.returncode == 0, unlocked.stdout


def test_cli_usage_errors_exit_2(tmp_path: Path) -> None:
    unknown = acp("check", "--only", "NOPE-001", "--", *BASE_AGENT)
    assert unknown.returncode == 2
    assert "NOPE-001" in unknown.stderr
    assert acp("check").returncode == 2
    assert acp("check", "--grace", "0", "--", *BASE_AGENT).returncode == 2
    no_folder = acp(
        "check",
        "--junit",
        str(tmp_path / "missing" / "r.xml"),
        "--only",
        "initialize",
        "--",
        *BASE_AGENT,
    )
    assert no_folder.returncode == 2 and "cannot write" in no_folder.stderr


def test_cli_lists_every_check_with_its_ids_and_needs() -> None:
    listing = acp("check", "--list")
    assert listing.returncode == 0
    for check in CHECKS:
        assert check.key in listing.stdout
    assert "needs: slow-prompt" in listing.stdout
