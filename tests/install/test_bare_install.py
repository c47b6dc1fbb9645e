"""A bare ``pip install acpwire`` (no extras) works: what a new user gets first.

Every project venv installs some extra, and extras pull in packages (such as
typing_extensions) the core may silently rely on. So this builds a wheel from a copy
of the checkout, installs it with no extras into a fresh venv of the interpreter that
runs the suite (msgspec comes from the package index), and uses it as a user would:
imports, the demo agent over real pipes, and the commands that need an extra.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from waiting import TIMEOUT

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT = 300.0
PUBLIC_PACKAGES = [
    "acpwire",
    "acpwire.agent",
    "acpwire.client",
    "acpwire.conformance",
    "acpwire.demo",
    "acpwire.engine",
    "acpwire.protocol",
    "acpwire.schema",
    "acpwire.server",
    "acpwire.testing",
    "acpwire.transports",
]


@dataclass(frozen=True)
class BareInstall:
    python: Path
    acp: Path
    env: dict[str, str]
    home: Path

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.acp), *args],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.home,
            timeout=TIMEOUT,
        )


def _copy_project(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / "src", dest / "src", ignore=ignore)


def _pip(python: Path | str, *args: str) -> None:
    # Without PYTHONPATH and the like: a checkout's src/ on it would make pip find acpwire
    # "already installed" in the fresh venv and install nothing.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", "-q", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=INSTALL_TIMEOUT,
    )
    assert done.returncode == 0, f"pip {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> BareInstall:
    base = tmp_path_factory.mktemp("bare-install")
    project, dist, venv, home = (base / n for n in ("project", "dist", "venv", "home"))
    for folder in (project, dist, home):
        folder.mkdir()
    _copy_project(project)
    _pip(sys.executable, "wheel", "--no-deps", "-w", str(dist), str(project))
    (wheel,) = dist.glob("acpwire-*.whl")
    # A venv made from this (venv's) interpreter sits on the same base Python and does
    # not see this venv's packages.
    subprocess.run(
        [sys.executable, "-m", "venv", "--clear", str(venv)], check=True, timeout=INSTALL_TIMEOUT
    )
    python = venv / "bin" / "python"
    _pip(python, "install", str(wheel))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "ACPWIRE_", "XDG_"))}
    env.update(HOME=str(home), PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    env.pop("VIRTUAL_ENV", None)
    return BareInstall(python=python, acp=venv / "bin" / "acp", env=env, home=home)


def test_a_bare_install_has_no_extras(bare: BareInstall) -> None:
    code = (
        "import importlib.util as u, json\n"
        "names = ['rich', 'textual', 'mcp', 'uvicorn', 'websockets', 'httpx', 'typing_extensions']\n"
        "print(json.dumps([n for n in names if u.find_spec(n) is not None]))\n"
    )
    done = subprocess.run(
        [str(bare.python), "-c", code], capture_output=True, text=True, env=bare.env, check=True
    )
    assert json.loads(done.stdout) == []


IMPORT_EVERYTHING = """
import importlib, json, pkgutil, sys
from importlib import metadata

public = json.loads(sys.argv[1])
extras = set()
for requirement in metadata.requires("acpwire") or []:
    name, _, marker = requirement.partition(";")
    if "extra ==" in marker and '"dev"' not in marker:
        extras.add(name.split(">")[0].split("=")[0].split("[")[0].strip().replace("-", "_"))
report = {"failed": {}, "needs_extra": {}, "missing_names": []}
for package in public:
    module = importlib.import_module(package)
    for name in getattr(module, "__all__", []):
        if not hasattr(module, name):
            report["missing_names"].append(f"{package}.{name}")
import acpwire
for info in pkgutil.walk_packages(acpwire.__path__, "acpwire."):
    try:
        importlib.import_module(info.name)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        plugin = top == "pytest" and info.name.endswith(".pytest_plugin")  # pytest loads it
        key = "needs_extra" if top in extras or plugin else "failed"
        report[key][info.name] = repr(exc)
    except ImportError as exc:  # an adapter's one-line hint names the extra to install
        key = "needs_extra" if "pip install 'acpwire[" in str(exc) else "failed"
        report[key][info.name] = repr(exc)
    except Exception as exc:
        report["failed"][info.name] = repr(exc)
print(json.dumps(report))
"""


def test_every_public_package_and_module_imports_without_extras(bare: BareInstall) -> None:
    done = subprocess.run(
        [str(bare.python), "-c", IMPORT_EVERYTHING, json.dumps(PUBLIC_PACKAGES)],
        capture_output=True,
        text=True,
        env=bare.env,
        cwd=bare.home,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["failed"] == {}
    assert report["missing_names"] == []
    # Only the command line (Rich/Textual live there and nowhere else), the framework
    # adapters (one extra each, docs/adapters/) and the recorder's pytest plugin may need
    # what a bare install lacks.
    allowed = ("acpwire.cli.", "acpwire.adapters.", "acpwire.recorder.pytest_plugin")
    assert all(name.startswith(allowed) for name in report["needs_extra"]), report


class _LineReader:
    """Lines of a pipe, read on a thread so every wait has one bounded timeout."""

    def __init__(self, stream: Any) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: Any) -> None:
        for line in stream:
            self.lines.put(line)
        self.lines.put(None)

    def message(self) -> dict[str, Any]:
        line = self.lines.get(timeout=TIMEOUT)
        assert line is not None, "the agent closed its stdout"
        message = json.loads(line)  # nothing but protocol on an agent's stdout
        assert isinstance(message, dict)
        return message


@pytest.fixture
def demo_agent(bare: BareInstall) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        [str(bare.acp), "demo-agent"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=bare.env,
        cwd=bare.home,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(TIMEOUT)
        for stream in (process.stdin, process.stdout, process.stderr):
            assert stream is not None
            stream.close()


def test_the_demo_agent_serves_a_prompt_over_stdio_from_a_bare_install(
    bare: BareInstall, demo_agent: subprocess.Popen[str]
) -> None:
    assert demo_agent.stdin is not None and demo_agent.stdout is not None
    reader = _LineReader(demo_agent.stdout)

    def call(request_id: int, method: str, params: dict[str, Any]) -> tuple[Any, list[Any]]:
        assert demo_agent.stdin is not None
        request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        demo_agent.stdin.write(json.dumps(request) + "\n")
        demo_agent.stdin.flush()
        notifications = []
        while True:
            message = reader.message()
            if message.get("id") == request_id and "method" not in message:
                assert "error" not in message, message
                return message["result"], notifications
            notifications.append(message)

    init, _ = call(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert init["protocolVersion"] == 1
    session, _ = call(2, "session/new", {"cwd": str(bare.home), "mcpServers": []})
    prompt = [{"type": "text", "text": "help"}]
    result, updates = call(
        3, "session/prompt", {"sessionId": session["sessionId"], "prompt": prompt}
    )
    assert result["stopReason"] == "end_turn"
    kinds = {
        u["params"]["update"]["sessionUpdate"] for u in updates if u["method"] == "session/update"
    }
    assert "agent_message_chunk" in kinds
    demo_agent.stdin.close()
    assert demo_agent.wait(TIMEOUT) == 0
    assert demo_agent.stderr is not None
    assert "Traceback" not in demo_agent.stderr.read()


def test_acp_check_lists_its_requirements_from_a_bare_install(bare: BareInstall) -> None:
    done = bare.run("check", "--list")
    assert done.returncode == 0, done.stderr
    assert "INIT-003" in done.stdout
    assert "Traceback" not in done.stderr


def test_the_wheel_ships_the_web_client_files(bare: BareInstall) -> None:
    """``acp serve --ui`` serves files that are package data (docs/webui.md): a wheel that
    left them out would fail only when someone opened the page."""
    code = "from acpwire.server.ui import UiFiles; UiFiles()"
    done = subprocess.run(
        [str(bare.python), "-c", code],
        capture_output=True,
        text=True,
        env=bare.env,
        cwd=bare.home,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["chat"], "cli"),
        (["chat", "--prompt", "help"], "cli"),
        (["serve", "--demo"], "remote"),
    ],
    ids=["chat", "chat-prompt", "serve"],
)
def test_a_command_that_needs_an_extra_names_it_and_fails_without_a_traceback(
    bare: BareInstall, args: list[str], extra: str
) -> None:
    done = bare.run(*args)
    assert done.returncode != 0
    assert f"pip install 'acpwire[{extra}]'" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
