"""``acp check --client`` through the command line: ``acp chat`` passes every MUST check,
the official SDK's peer client is driven end to end, and usage errors exit 2.

The corpus of planted client defects is ``test_client_corpus.py``.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from acpwire.cli.main import main
from acpwire.conformance import checks_for
from acpwire.conformance.clients.driver import scripted_agent_command

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
ACP = [sys.executable, "-m", "acpwire.cli.main"]
PYTHON = shlex.quote(sys.executable)
CHAT = f"{PYTHON} -m acpwire.cli.main chat --prompt {{prompt}} --policy allow -- {{agent}}"

sys.path.insert(0, str(TESTS / "interop"))
import sdk_install  # noqa: E402


def acp(*args: str, timeout: float = 240.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ACP, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.timeout(300)
def test_acp_chat_passes_every_must_check_of_acp_check_client(tmp_path: Path) -> None:
    junit = tmp_path / "client.xml"
    run = acp("check", "--json", "--junit", str(junit), "--timeout", "30", "--client", CHAT)
    data: dict[str, Any] = json.loads(run.stdout)
    not_passed = {
        r["check"]: (r["status"], r["detail"]) for r in data["results"] if r["status"] != "pass"
    }
    assert data["failedMust"] == [], not_passed
    assert run.returncode == 0, run.stderr
    # acp chat offers files and terminals and cancels on Ctrl-C: nothing is skipped
    assert data["counts"]["skip"] == data["counts"]["n/a"] == 0, not_passed
    assert len(data["results"]) == len(checks_for("client"))
    assert data["target"] == "client" and data["clientInfo"]["name"] == "acpwire"
    suite = ET.parse(junit).getroot()
    assert {case.get("classname") for case in suite.iter("testcase")} == {"acp-check.client"}


def test_a_client_that_never_starts_the_agent_is_reported_blocked() -> None:
    run = acp("check", "--json", "--timeout", "5", "--client", f"{PYTHON} -c pass {{agent}}")
    assert run.returncode == 3, run.stdout
    data = json.loads(run.stdout)
    assert "did not start the agent: it exited with status 0" in data["blocked"]
    assert data["counts"]["skip"] == len(checks_for("client"))


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--client", "acp chat --prompt hi"], "{agent}"),
        (["--client", "my-client --agent={agent}"], "{agent_line}"),
        (["--client", "x {agent}", "--", "my-agent"], "not both"),
        (["--client", "x {agent}", "--only", "NOPE-9"], "NOPE-9"),
        (["--client", "x {agent}", "--only", "INIT-009"], "names no client check"),
    ],
)
def test_client_usage_errors_exit_2(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", *args]) == 2
    assert said in capsys.readouterr().err


@pytest.mark.timeout(120)
def test_the_typescript_sdk_peer_client_is_driven_and_its_missing_sandbox_flagged(
    tmp_path: Path,
) -> None:
    """Informational: the TS peer serves the real disk unconfined (see docs/check.md)."""
    reason = sdk_install.ts_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    scenario = tmp_path / "scenario.json"
    steps = [
        {"call": "initialize"},
        {"call": "session/new"},
        {"call": "session/prompt", "text": "go"},
    ]
    scenario.write_text(
        json.dumps({"clientCapabilities": "full", "permission": "allow", "steps": steps})
    )
    command = shlex.join([*sdk_install.ts_client_command(), "--scenario", str(scenario)])
    only = (
        "client-initialize,client-ext-request,garbage-lines,agent-exit,fs-dotdot,fs-write-creates"
    )
    run = acp(
        "check",
        "--json",
        "--timeout",
        "20",
        "--quick-timeout",
        "5",
        "--grace",
        "5",
        "--only",
        only,
        "--client",
        command + " --agent {agent_line}",
    )
    data = json.loads(run.stdout)
    statuses = {r["check"]: r["status"] for r in data["results"]}
    assert statuses == {
        "client-initialize": "pass",
        "client-ext-request": "pass",
        "garbage-lines": "pass",
        "agent-exit": "pass",
        "fs-write-creates": "pass",
        "fs-dotdot": "fail",
    }, data["results"]
    assert data["failedMust"] == ["fs-dotdot"] and run.returncode == 1
    assert data["clientInfo"]["name"] == "acpwire-ts-peer-client"


def test_the_scripted_agent_exits_when_the_checker_goes_away(tmp_path: Path) -> None:
    """A checker that dies leaves no agent behind, whatever the client does."""
    path = str(tmp_path / "control.sock")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()
        server.settimeout(10)
        with subprocess.Popen(
            scripted_agent_command(path, "orphan-test"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as agent:
            control, _ = server.accept()
            with control, control.makefile("rb") as events:
                hello = json.loads(events.readline())
                assert hello["event"] == "hello" and hello["scenario"] == "orphan-test"
                assert hello["pid"] == agent.pid
            # the control connection closed, the agent's stdin still open: it exits
            assert agent.wait(10) == 70
