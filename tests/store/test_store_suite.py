"""Every store passes the one behaviour suite (acpwire.testing.store_suite)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _pg import PgPlace

from acpwire.store import MemorySessionStore, SqliteSessionStore
from acpwire.testing.store_suite import STORE_CHECKS, StoreCheck, store_checks


@pytest.mark.parametrize("check", store_checks(shared=False), ids=str)
async def test_the_memory_store(check: StoreCheck) -> None:
    await check.run(MemorySessionStore)


@pytest.mark.parametrize("check", store_checks(shared=True), ids=str)
async def test_the_sqlite_store(check: StoreCheck, tmp_path: Path) -> None:
    await check.run(lambda: SqliteSessionStore(tmp_path / "sessions.sqlite3"))


@pytest.mark.slow  # a PostgreSQL server
@pytest.mark.parametrize("check", store_checks(shared=True), ids=str)
async def test_the_postgres_store(check: StoreCheck, pg: PgPlace) -> None:
    await check.run(pg.store)


def test_the_suite_names_its_checks_uniquely_and_marks_the_shared_ones() -> None:
    names = [c.name for c in STORE_CHECKS]
    assert len(names) == len(set(names)) > 40
    shared = {c.name for c in STORE_CHECKS if c.shared}
    assert shared == {
        "sessions_and_history_survive_reopening",
        "two_stores_on_the_same_storage_see_each_others_writes",
        "a_claim_made_through_one_store_binds_every_other",
    }
    assert {c.name for c in store_checks(shared=True, ledger=False)} == {
        c.name for c in STORE_CHECKS if not c.ledger
    }


async def test_a_store_that_breaks_a_rule_fails_the_suite() -> None:
    """The suite can fail: a store that forgets to bump updated_at on append is caught."""

    class Forgetful(MemorySessionStore):
        async def extend_many(self, batch):  # type: ignore[no-untyped-def]
            before = {sid: await self.get(sid) for sid in batch}
            missing = await super().extend_many(batch)
            for record in before.values():
                if record is not None:
                    await self.update(record, touch=False)  # undo the bump
            return missing

    check = next(c for c in STORE_CHECKS if c.name == "append_bumps_updated_at")
    with pytest.raises(AssertionError):
        await check.run(Forgetful)


async def test_a_store_whose_later_claim_takes_a_session_over_fails_the_suite() -> None:
    """The ledger checks can fail: a claim that replaces the owner is caught."""

    class Usurping(MemorySessionStore):
        async def claim_owner(self, session_id: str, principal: str) -> str | None:
            record = await self.get(session_id)
            if record is None:
                return None
            await self.delete(session_id)
            record.owner = principal
            await self.create(record)
            return principal

    check = next(
        c for c in STORE_CHECKS if c.name == "claim_owner_records_the_first_principal_only"
    )
    with pytest.raises(AssertionError):
        await check.run(Usurping)
