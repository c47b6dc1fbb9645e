"""Importing an adapter whose framework is not installed fails with one line saying
what to install, whatever is installed here: the framework is hidden from a fresh
interpreter by an import hook."""

from __future__ import annotations

import subprocess
import sys

import pytest

HIDE = """
import importlib.abc, sys
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == {top!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Hide())
try:
    import acpwire.adapters.{adapter}
except ImportError as error:
    print(type(error).__name__, error, sep=": ")
else:
    print("imported")
"""

ADAPTERS = [
    ("pydantic_ai", "pydantic_ai", "pydantic-ai", "pydantic-ai"),
    ("openai_agents", "agents", "openai-agents", "openai-agents"),
    ("langgraph", "langgraph", "langgraph", "langgraph"),
    ("smolagents", "smolagents", "smolagents", "smolagents"),
]


@pytest.mark.parametrize(("adapter", "top", "package", "extra"), ADAPTERS)
def test_a_missing_framework_is_named_with_the_install_line(
    adapter: str, top: str, package: str, extra: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", HIDE.format(top=top, adapter=adapter)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"ImportError: acpwire.adapters.{adapter} needs {package}: pip install 'acpwire[{extra}]'"
    ]
