"""``acp check`` against real agents over stdio: conforming ones pass every MUST check,
a deliberately broken one fails exactly the checks for its defects, with their ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from acpwire.testing.conformance import CheckOptions, Report, run_checks

TESTS = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
BROKEN_AGENT = [sys.executable, str(HERE / "broken_agent.py")]
ENGINE_AGENT = [sys.executable, str(TESTS / "engine" / "agent_program.py")]
AUTH_AGENT = [sys.executable, str(TESTS / "cli" / "auth_agent.py")]
ACP = [sys.executable, "-m", "acpwire.cli.main"]
TIMEOUT = 30.0


def demo_agent(tmp_path: Path) -> list[str]:
    return [sys.executable, "-m", "acpwire.demo", "--store", str(tmp_path / "store")]


def ts_agent() -> list[str]:
    sys.path.insert(0, str(TESTS / "interop"))
    try:
        import sdk_install  # type: ignore[import-not-found]
    finally:
        sys.path.pop(0)
    reason = sdk_install.ts_skip_reason()
    if reason:
        pytest.skip(reason)
    command: list[str] = sdk_install.ts_agent_command()
    return command


def statuses(report: Report) -> dict[str, str]:
    return {r.check.key: r.status for r in report.results}


def failures(report: Report) -> dict[str, str]:
    return {r.check.key: r.detail for r in report.results if r.status == "fail"}


async def check(command: list[str], tmp_path: Path, **options: object) -> Report:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return await run_checks(
        CheckOptions(command=command, cwd=str(work), timeout=TIMEOUT, **options)  # type: ignore[arg-type]
    )


async def test_demo_agent_passes_every_check(tmp_path: Path) -> None:
    report = await check(demo_agent(tmp_path), tmp_path, slow_prompt="slow 30")
    assert failures(report) == {}
    assert report.exit_code == 0
    got = statuses(report)
    # The demo agent offers every feature, so nothing is skipped or not applicable...
    for key in ("cancel", "session-load", "session-list", "set-mode", "set-config-option"):
        assert got[key] == "pass", key
    # ...and the wire checks really ran (the official schema is installed for the tests).
    assert got["stdout-clean"] == "pass"
    assert report.agent_info is not None and report.agent_info["name"] == "acpwire-demo"


async def test_engine_test_agent_passes_every_must_check(tmp_path: Path) -> None:
    report = await check(ENGINE_AGENT, tmp_path, slow_prompt="slow")
    assert failures(report) == {}
    got = statuses(report)
    assert got["cancel"] == "pass"
    assert got["session-load"] == "n/a"  # loadSession is not advertised
    assert got["unadvertised-methods"] == "pass"  # ...and session/load is refused


async def test_typescript_sdk_agent_passes_every_must_check(tmp_path: Path) -> None:
    report = await check(ts_agent(), tmp_path, slow_prompt="slow")
    assert failures(report) == {}
    got = statuses(report)
    for key in ("cancel", "session-load", "session-list", "set-mode", "set-config-option"):
        assert got[key] == "pass", key


async def test_broken_agent_fails_the_checks_for_its_defects(tmp_path: Path) -> None:
    report = await check(BROKEN_AGENT, tmp_path, slow_prompt="slow")
    failed = failures(report)
    assert set(failed) == {"stdout-clean", "version-newer", "version-unknown", "cancel"}
    assert "broken agent 0.1 starting up" in failed["stdout-clean"]
    assert "answered 65535" in failed["version-unknown"]
    assert "stopReason 'end_turn'" in failed["cancel"]
    by_key = {r.check.key: r for r in report.results}
    assert set(by_key["stdout-clean"].check.ids) >= {"TRANS-004"}
    assert by_key["version-unknown"].check.ids == ("INIT-009",)
    assert "CANCEL-004" in by_key["cancel"].check.ids
    assert report.exit_code == 1
    # Its other behaviour is fine and reported so.
    assert statuses(report)["prompt"] == "pass"
    assert statuses(report)["malformed-line-error"] == "pass"  # silence is allowed


async def test_cancel_checks_skip_without_a_slow_prompt(tmp_path: Path) -> None:
    report = await check(ENGINE_AGENT, tmp_path, only=frozenset({"cancel", "prompt"}))
    got = statuses(report)
    assert got == {"prompt": "pass", "cancel": "skip"}
    assert "--slow-prompt" in report.results[-1].detail


async def test_an_agent_that_needs_authentication_is_reported_not_failed(tmp_path: Path) -> None:
    report = await check(AUTH_AGENT, tmp_path)
    got = statuses(report)
    assert got["session-new"] == "skip"
    assert (
        "needs authentication"
        in report.results[[r.check.key for r in report.results].index("session-new")].detail
    )
    assert got["prompt"] == "skip"
    assert report.exit_code == 0

    authed = await check(AUTH_AGENT, tmp_path, auth_method="token")
    assert statuses(authed)["session-new"] == "pass"
    assert statuses(authed)["prompt"] == "pass"


async def test_a_missing_agent_fails_initialize(tmp_path: Path) -> None:
    report = await check(["/nonexistent/agent-binary"], tmp_path, only=frozenset({"initialize"}))
    assert statuses(report) == {"initialize": "fail"}
    assert report.exit_code == 1


def acp(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "160"}
    return subprocess.run(
        [*ACP, *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def test_cli_json_report_and_exit_status(tmp_path: Path) -> None:
    broken = acp("check", "--json", "--only", "TRANS-004,INIT-009,prompt", "--", *BROKEN_AGENT)
    assert broken.returncode == 1, broken.stderr
    data = json.loads(broken.stdout)
    assert {r["check"]: r["status"] for r in data["results"]} == {
        "version-newer": "fail",
        "version-unknown": "fail",
        "stdout-clean": "fail",
        "prompt": "pass",
    }
    assert data["failedMust"] == ["version-newer", "version-unknown", "stdout-clean"]
    assert broken.stderr == ""

    good = acp("check", "--only", "initialize,schema", "--", *demo_agent(tmp_path))
    assert good.returncode == 0, good.stdout + good.stderr
    assert "INIT-008" in good.stdout and "pass" in good.stdout


def test_cli_rejects_unknown_ids_and_a_missing_command() -> None:
    unknown = acp("check", "--only", "NOPE-001", "--", *ENGINE_AGENT)
    assert unknown.returncode == 2
    assert "NOPE-001" in unknown.stderr
    assert acp("check").returncode == 2
    listing = acp("check", "--list")
    assert listing.returncode == 0 and "RPC-006" in listing.stdout
