"""Where a store test's PostgreSQL stores live (imported by the tests and conftest.py)."""

from __future__ import annotations

from dataclasses import dataclass

from acpwire.store.postgres import PostgresSessionStore


@dataclass(frozen=True)
class PgPlace:
    """Where a test's PostgreSQL stores live: the cluster's URL and a schema of their own."""

    dsn: str
    schema: str

    def store(self, **options: object) -> PostgresSessionStore:
        return PostgresSessionStore(self.dsn, schema=self.schema, **options)  # type: ignore[arg-type]
