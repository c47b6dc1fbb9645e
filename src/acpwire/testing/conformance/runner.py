"""Runs a whole check: the live runs side by side, then the wire checks, into a report."""

from __future__ import annotations

import asyncio
import importlib
import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .live import LiveChecks
from .report import Report, Verdicts
from .wire import WireEntry
from .wire_checks import WireChecks

__all__ = ["CheckOptions", "find_official_schema", "run_checks"]


def find_official_schema(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The official ACP v1 ``schema.json``, or None.

    Looks at ``explicit``, then ``$ACPWIRE_SCHEMA_DIR/v1/schema.json``, then an npm install
    of ``@agentclientprotocol/sdk`` (``node_modules`` or acpwire's ``.cache/npm``) in the
    current folder, the folders above it, and the folders above this package.
    """
    if explicit is not None:
        path = Path(explicit)
        return path if path.is_file() else None
    candidates: list[Path] = []
    env = os.environ.get("ACPWIRE_SCHEMA_DIR")
    if env:
        candidates.append(Path(env) / "v1" / "schema.json")
    tail = Path("@agentclientprotocol") / "sdk" / "schema" / "v1" / "schema.json"
    here = Path.cwd().resolve()
    package = Path(__file__).resolve().parent
    for base in (here, *here.parents, *package.parents):
        candidates.append(base / "node_modules" / tail)
        candidates.append(base / ".cache" / "npm" / "node_modules" / tail)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return None


@dataclass
class CheckOptions:
    """What to check and how: the agent's argv and the knobs of ``acp check``."""

    command: Sequence[str]
    prompt: str = "Hello"
    """A prompt the agent answers quickly."""
    slow_prompt: str | None = None
    """A prompt that keeps the agent busy long enough to be cancelled (cancel checks skip without)."""
    only: frozenset[str] | None = None
    """Check keys to run and report (see :func:`select_checks`); None means all."""
    timeout: float = 30.0
    """Seconds to wait for any one answer (a turn included)."""
    cwd: str | None = None
    """The sessions' folder (absolute); a fresh temporary folder when None."""
    schema: str | os.PathLike[str] | None = None
    auth_method: str | None = None
    """``authenticate`` with this method id when session/new says authentication is required."""
    env: Mapping[str, str] | None = None


def _session_folder(cwd: str | None) -> tuple[str | None, str]:
    """(temporary folder to remove afterwards or None, absolute session cwd)."""
    if cwd is not None:
        return None, os.path.abspath(cwd)
    temp = tempfile.mkdtemp(prefix="acp-check-")
    return temp, str(Path(temp).resolve())


async def run_checks(options: CheckOptions) -> Report:
    """Run the checks against ``options.command``; never raises for agent misbehaviour."""
    if not options.command:
        raise ValueError("no agent command")
    started = time.monotonic()
    schema: dict[str, Any] | None = None
    schema_note: str | None = None
    schema_path = find_official_schema(options.schema)
    if schema_path is None:
        schema_note = (
            "official schema not found (install @agentclientprotocol/sdk with npm, set "
            "ACPWIRE_SCHEMA_DIR, or pass --schema PATH)"
        )
    else:
        try:
            importlib.import_module("jsonschema")  # only whether it is installed
        except ImportError:
            schema_note = "schema validation needs jsonschema: pip install jsonschema"
        else:
            from ..schema_check import load_official_schema

            schema = load_official_schema(schema_path)
    temp, cwd = _session_folder(options.cwd)
    verdicts = Verdicts(options.only)
    report = Report(command=list(options.command))
    entries: list[WireEntry] = []
    live = LiveChecks(options, verdicts, report, entries, cwd)
    if schema_path is not None:
        report.notes.append(f"schema: {schema_path}")
    try:
        await asyncio.gather(live.main_run(), live.version_probes())
        WireChecks(verdicts, entries, live.runs).run_all(schema, schema_note)
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    report.results = verdicts.ordered()
    report.duration = time.monotonic() - started
    return report
