"""The adapters are served in process with tests/agent's harness (a client with real
files and terminals, every message checked against the official schema); apps served
in a test are closed when it ends. No test reaches a model provider: each uses its
framework's own test models, and the environment below keeps the frameworks offline."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "agent"))

from _app_harness import OPEN_APPS

# No key and no tracing: a framework that would call a provider or a telemetry
# endpoint by default finds nothing to call.
for _name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HF_TOKEN", "LANGSMITH_API_KEY"):
    os.environ.pop(_name, None)
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
os.environ["LANGSMITH_TRACING"] = "false"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["PYDANTIC_AI_NO_BANNER"] = "1"


@pytest.fixture(autouse=True)
async def _close_served_apps() -> AsyncIterator[None]:
    yield
    while OPEN_APPS:
        await OPEN_APPS.pop().aclose()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The session's folder, with one file in it."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    return root
