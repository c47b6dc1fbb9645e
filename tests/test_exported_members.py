"""The public surface is small, curated and importable; the library never imports the CLI."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PUBLIC = [
    "acpwire",
    "acpwire.agent",
    "acpwire.client",
    "acpwire.conformance",
    "acpwire.schema",
    "acpwire.store",
    "acpwire.transports",
    "acpwire.testing",
    "acpwire.recorder",
]


@pytest.mark.parametrize("module", PUBLIC)
def test_every_exported_name_exists_and_is_public(module: str) -> None:
    mod = importlib.import_module(module)
    names = mod.__all__
    assert len(names) == len(set(names))
    for name in names:
        assert hasattr(mod, name), f"{module}.{name} is exported but missing"
        assert not name.startswith("_") or name == "__version__"


@pytest.mark.slow
def test_importing_the_library_does_not_import_the_cli_or_ui_libraries() -> None:
    code = (
        "import sys, acpwire, acpwire.agent, acpwire.client, acpwire.schema, acpwire.transports\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('rich', 'textual') or m == 'acpwire.cli' or m.startswith('acpwire.cli.')]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_package_is_typed() -> None:
    from importlib.resources import files

    assert files("acpwire").joinpath("py.typed").is_file()


def test_a_low_tier_stdio_agent_starts_without_the_high_tier_or_other_transports() -> None:
    """Start-up time is part of spawn-to-session: importing stays minimal."""
    code = (
        "import sys\n"
        "from acpwire.agent.connection import Agent, run_agent\n"
        "heavy = ['acpwire.agent.app', 'acpwire.store', 'acpwire.agent.mcp', 'importlib.metadata',\n"
        "         'acpwire.transports.subprocess', 'acpwire.transports.http', 'acpwire.transports.websocket']\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_an_agent_app_starts_without_mcp_or_the_file_sandbox() -> None:
    """Most agents use neither: they are loaded when a session first needs them."""
    code = (
        "import sys\n"
        "from acpwire.agent import AgentApp, Turn\n"
        "AgentApp('x', store='sqlite:///:memory:')\n"
        "heavy = ['acpwire.agent.mcp', 'mcp', 'acpwire.sandbox', 'acpwire.store.postgres',\n"
        "         'importlib.metadata', 'acpwire.transports.subprocess']\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_an_agent_app_with_a_sqlite_file_starts_without_what_its_first_session_does_not_use() -> (
    None
):
    """Spawn-to-session includes the imports: the other stores, tool calls, terminals,
    forms and the unstable session methods load on first use (issue 13)."""
    code = (
        "import sys\n"
        "from acpwire.agent import AgentApp, Turn\n"
        "AgentApp('x', store=sys.argv[1])\n"
        "heavy = ['acpwire.store.memory', 'acpwire.store.paths', 'acpwire.agent.tools',\n"
        "         'acpwire.agent.terminals', 'acpwire.protocol.forms', 'acpwire.agent.session_admin']\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, "sessions.db"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == ""


def test_lazy_names_resolve() -> None:
    import acpwire.agent
    import acpwire.transports

    assert acpwire.agent.AgentApp.__name__ == "AgentApp"
    assert acpwire.transports.spawn.__name__ == "spawn"
    with pytest.raises(AttributeError):
        _ = acpwire.agent.NoSuchThing  # type: ignore[attr-defined]


def test_the_version_matches_pyproject() -> None:
    import re
    from pathlib import Path

    import acpwire

    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    match = re.search(r'^version = "([^"]+)"', text, re.M)
    assert match is not None
    assert acpwire.__version__ == match.group(1)
