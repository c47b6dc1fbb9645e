"""Fixtures of the store tests: a fresh PostgreSQL schema per test on the session's cluster."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg  # type: ignore[import-untyped]
import pytest
from _pg import PgPlace

from acpwire.testing.postgres import PostgresCluster


@pytest.fixture
async def pg(postgres_cluster: PostgresCluster) -> AsyncIterator[PgPlace]:
    place = PgPlace(postgres_cluster.dsn(), f"test_{uuid.uuid4().hex[:12]}")
    yield place
    conn = await asyncpg.connect(place.dsn)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{place.schema}" CASCADE')
    finally:
        await conn.close()
