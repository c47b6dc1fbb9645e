"""Fixtures of the store tests: a fresh PostgreSQL schema per test on the session's cluster."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg  # type: ignore[import-untyped]
import pytest

from acpwire.store.postgres import PostgresSessionStore
from acpwire.testing.postgres import PostgresCluster


@dataclass(frozen=True)
class PgPlace:
    """Where a test's PostgreSQL stores live: the cluster's URL and a schema of their own."""

    dsn: str
    schema: str

    def store(self, **options: object) -> PostgresSessionStore:
        return PostgresSessionStore(self.dsn, schema=self.schema, **options)  # type: ignore[arg-type]


@pytest.fixture
async def pg(postgres_cluster: PostgresCluster) -> AsyncIterator[PgPlace]:
    place = PgPlace(postgres_cluster.dsn(), f"test_{uuid.uuid4().hex[:12]}")
    yield place
    conn = await asyncpg.connect(place.dsn)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{place.schema}" CASCADE')
    finally:
        await conn.close()
