"""The README runs as written: its Python blocks, and its commands through ``bin/acp``.

Each Python block is either an agent (it ends in ``app.run()``; driven here by a real
client over a pipe) or a client script (``asyncio.run``; run against
examples/echo_agent.py from the repository root, its printed line compared with the
one the README promises). The quick start keeps exactly two commands.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import TIMEOUT

from acpwire.client import AllowAll, ToolkitClient, open_agent

pytestmark = pytest.mark.slow  # the README's examples run as processes

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(language: str, text: str = README) -> list[str]:
    return [body for lang, body in BLOCK.findall(text) if lang == language]


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end >= 0 else None]


def python_block(marker: str) -> str:
    (found,) = [b for b in blocks("python") if marker in b]
    return found


def test_every_python_block_is_an_agent_or_a_client_script() -> None:
    kinds = [
        "agent" if "app.run()" in b else "client" if "asyncio.run(" in b else "neither"
        for b in blocks("python")
    ]
    assert sorted(kinds) == ["agent", "client"]


def test_the_quick_start_is_exactly_two_commands() -> None:
    (script,) = blocks("sh", section("Quick start"))
    commands = [line.split("#")[0].strip() for line in script.splitlines() if line.strip()]
    assert commands == ['bin/acp chat --prompt "help"', "bin/test"]


async def test_the_readme_agent_answers_a_real_client(tmp_path: Path) -> None:
    agent = tmp_path / "myagent.py"
    agent.write_text(python_block("app.run()"), encoding="utf-8")
    client = ToolkitClient(permissions=AllowAll())
    async with open_agent([sys.executable, str(agent)], client=client, cwd=tmp_path):
        session = await client.new_session(str(tmp_path))
        result = await client.prompt(session.session_id, "hello")
    assert result.stop_reason == "end_turn"
    assert [m.text for m in session.messages] == ["hello", "You said: hello"]


def test_the_readme_client_script_prints_what_the_readme_says(tmp_path: Path) -> None:
    script = tmp_path / "client.py"
    script.write_text(python_block("asyncio.run("), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    promised = re.search(r"it prints `([^`]+)`", section("Drive an agent"))
    assert promised is not None
    assert done.stdout == promised.group(1) + "\n"


# ----------------------------------------------------------------- bin/acp


def run_bin_acp(
    args: list[str], tmp_path: Path, *, cwd: Path = ROOT, path_first: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """bin/acp in the venv this suite runs in (PYTHON picks it, see bin/_env.sh)."""
    venv = Path(sys.prefix)
    if venv.parent != ROOT or not venv.name.startswith(".venv"):
        pytest.skip(f"the suite runs outside the project's venvs ({venv}), bin/acp would make one")
    env = {**os.environ, "PYTHON": sys.executable, "ACPWIRE_DATA_DIR": str(tmp_path / "data")}
    if path_first is not None:
        env["PATH"] = f"{path_first}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(
        [str(ROOT / "bin" / "acp"), *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def test_the_first_quick_start_command_answers(tmp_path: Path) -> None:
    (script,) = blocks("sh", section("Quick start"))
    command = shlex.split(script.splitlines()[0].split("#")[0])
    assert command[0] == "bin/acp"
    done = run_bin_acp(command[1:], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "stop: end_turn" in done.stdout


def test_bin_acp_runs_python_agents_with_the_projects_python(tmp_path: Path) -> None:
    """`bin/acp chat -- python myagent.py` must not find another `python` first."""
    assert "bin/acp chat -- python myagent.py" in README.replace("\n", " ")
    (tmp_path / "myagent.py").write_text(python_block("app.run()"), encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    impostor = elsewhere / "python"
    impostor.write_text("#!/bin/sh\necho 'a python without acpwire' >&2\nexit 7\n")
    impostor.chmod(0o755)
    done = run_bin_acp(
        ["chat", "--prompt", "hello", "--", "python", "myagent.py"],
        tmp_path,
        cwd=tmp_path,
        path_first=elsewhere,
    )
    assert done.returncode == 0, done.stderr
    assert "You said: hello" in done.stdout
