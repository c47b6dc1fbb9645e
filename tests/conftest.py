"""Shared fixtures: the official schema and a validator for every message we emit."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("acpwire.testing.store_suite")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from schema_source import find_schema  # noqa: E402

from acpwire.testing import SchemaValidator, load_official_schema  # noqa: E402
from acpwire.testing.postgres import PostgresCluster, find_postgres_bin  # noqa: E402

CAPTURES = ROOT / "tests" / "captures"
"""Real agents' wire captures, shipped with the tests (tests/captures/README.md)."""

SLOW_FOLDERS = ("conformance",)
"""Folders of tests/ whose tests are slow as a rule: ``acp check`` run on whole agents,
clients and endpoints of the corpus. Elsewhere a slow test or module is marked where it is."""


@pytest.hookimpl(tryfirst=True)  # before -m "not slow" deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``-m "not slow"`` (the quick run between edits) also leaves out the interop tests
    (they start the official SDKs' peers) and the folders in SLOW_FOLDERS."""
    slow_folders = [ROOT / "tests" / folder for folder in SLOW_FOLDERS]
    for item in items:
        if any(item.path.is_relative_to(folder) for folder in slow_folders) or any(
            item.iter_markers("interop")
        ):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def official_schema() -> dict[str, Any]:
    path = find_schema("v1/schema.json")
    if path is None:
        pytest.skip(
            "official ACP schema not found (npm @agentclientprotocol/sdk not installed: "
            "bin/test installs it where npm is on PATH)"
        )
    return load_official_schema(path)


@pytest.fixture
def schema_validator(official_schema: dict[str, Any]) -> SchemaValidator:
    """A fresh validator: ``schema_validator.validate_conversation(log.sent, log.received)``."""
    return SchemaValidator(official_schema)


@pytest.fixture(scope="session")
def official_unstable_schema(official_schema: dict[str, Any]) -> dict[str, Any]:
    """The official ``v1/schema.unstable.json`` (stable ACP plus its unstable methods)."""
    path = find_schema("v1/schema.unstable.json")
    assert path is not None, "schema.json was found without schema.unstable.json beside it"
    return load_official_schema(path)


@pytest.fixture(scope="session")
def official_v2_schema(official_schema: dict[str, Any]) -> dict[str, Any]:
    """The official ``v2/schema.json`` (the v2 draft), for connections that chose v2."""
    path = find_schema("v2/schema.json")
    assert path is not None, "v1/schema.json was found without v2/schema.json"
    return load_official_schema(path)


@pytest.fixture
def unstable_schema_validator(official_unstable_schema: dict[str, Any]) -> SchemaValidator:
    """A fresh validator against ``schema.unstable.json``, for connections that opted in."""
    return SchemaValidator(official_unstable_schema)


@pytest.fixture(scope="session")
def captures_dir() -> Path:
    assert any(CAPTURES.glob("*.jsonl")), f"the wire captures are missing from {CAPTURES}"
    return CAPTURES


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """A throwaway PostgreSQL server for the whole run, stopped (and deleted) at its end."""
    if find_postgres_bin() is None:
        pytest.skip(
            "PostgreSQL server binaries (initdb, postgres) not found: "
            "apt-get install postgresql, or set $ACPWIRE_PG_BIN"
        )
    with PostgresCluster() as cluster:
        yield cluster
