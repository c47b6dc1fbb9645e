"""The adapter examples as real processes, with no API key: each passes ``acp check``
with no MUST failure, and answers ``acp chat --prompt`` with its scripted stand-in
model, which says so. Each runs from a copy in a temporary folder, so its session
store (a file next to the script) lands there."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # whole agent processes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ACP = [sys.executable, "-m", "acpwire.cli.main"]
LIMIT = 300  # seconds for a whole `acp check` run on a loaded machine (it takes ~15 s)
BOUNDS = ("--quick-timeout", "30", "--grace", "30")
"""acp check's waits for an answer that takes no work and for a cancelled turn to end
(5 s each by default, for a person at a terminal), made generous: CI shares its cores,
and an example failed a check once on a loaded machine. A turn that ignores
session/cancel still fails (the example's slow prompt streams for a minute)."""

FRAMEWORKS = {
    "pydantic_ai_agent.py": "pydantic_ai",
    "openai_agents_agent.py": "agents",
    "langgraph_agent.py": "langgraph",
    "smolagents_agent.py": "smolagents",
}


def example(name: str) -> str:
    if importlib.util.find_spec(FRAMEWORKS[name]) is None:
        pytest.skip(f"{FRAMEWORKS[name]} is not installed (the example's extra)")
    return name


@pytest.fixture(params=sorted(FRAMEWORKS))
def agent(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    name = example(request.param)
    folder = tmp_path / "agent"
    folder.mkdir()
    for file in (name, "_scripted.py"):
        shutil.copy(EXAMPLES / file, folder / file)
    return [sys.executable, str(folder / name)]


@pytest.fixture
def offline() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(OPENAI_AGENTS_DISABLE_TRACING="1", HF_HUB_OFFLINE="1", PYDANTIC_AI_NO_BANNER="1")
    return env


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("one\ntwo\n")
    return root


def test_the_example_passes_acp_check(
    agent: list[str], project: Path, offline: dict[str, str]
) -> None:
    done = subprocess.run(
        [
            *ACP,
            "check",
            *BOUNDS,
            "--cwd",
            str(project),
            "--slow-prompt",
            "slow",
            "--tool-prompt",
            "read notes.txt",
            "--tool-prompt",
            "write notes.txt: checked",
            "--tool-prompt",
            "count a b c",
            "--",
            *agent,
        ],
        capture_output=True,
        text=True,
        env=offline,
        timeout=LIMIT,
    )
    failed = [line for line in done.stdout.splitlines() if line.startswith("fail")]
    assert done.returncode == 0 and not failed, "\n".join(failed) or done.stdout + done.stderr
    assert "0 failed (0 MUST)" in done.stdout


def test_the_example_answers_acp_chat_with_its_scripted_model(
    agent: list[str], project: Path, offline: dict[str, str]
) -> None:
    chat = ["chat", "--cwd", str(project), "--policy", "allow", "--prompt", "read notes.txt"]
    done = subprocess.run(
        [*ACP, *chat, "--", *agent],
        capture_output=True,
        text=True,
        env=offline,
        timeout=LIMIT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "scripted stand-in model" in done.stdout
    assert "That file has 2 lines." in done.stdout
    assert f"[read] Read {project / 'notes.txt'}  completed" in done.stdout
