"""The behaviour every session store must show, as checks any test can run on any store.

acpwire runs these over its memory, SQLite and PostgreSQL stores; run them
over your own :class:`~acpwire.store.SessionStore` the same way. A check is
given an *opener*: a function returning a new store instance. Each check
starts from empty storage. Checks marked ``shared`` open two stores and need
both to see the same storage (a file, a database); leave them out for a store
whose instances share nothing (:func:`store_checks` with ``shared=False``).
Checks marked ``ledger`` need :class:`~acpwire.store.OwnerLedger` (the
owner claims several servers share); ``ledger=False`` leaves them out.

With pytest (and pytest-asyncio, or any plugin that runs ``async def`` tests):

.. code-block:: python

    import pytest
    from acpwire.testing.store_suite import store_checks

    @pytest.mark.parametrize("check", store_checks(shared=True), ids=str)
    async def test_my_store(check, tmp_path):
        await check.run(lambda: MyStore(tmp_path / "sessions.db"))

Checks fail with ``AssertionError``. For pytest's detailed assertion messages
call ``pytest.register_assert_rewrite("acpwire.testing.store_suite")`` in your
``conftest.py`` before this package is imported (it covers the modules of every group).

The checks come in groups, a module each: :mod:`.records`, :mod:`.history`,
:mod:`.listing`, :mod:`.owners`, :mod:`.deletion` and :mod:`.lifecycle`, all built on
:mod:`.base`.
"""

from __future__ import annotations

from . import deletion, history, lifecycle, listing, owners, records
from .base import Opener, StoreCheck

__all__ = ["STORE_CHECKS", "Opener", "StoreCheck", "store_checks"]

STORE_CHECKS: list[StoreCheck] = [
    *records.check.checks,
    *history.check.checks,
    *listing.check.checks,
    *owners.check.checks,
    *deletion.check.checks,
    *lifecycle.check.checks,
]
"""Every check, group by group, each group in the order its module declares them."""


def store_checks(*, shared: bool, ledger: bool = True) -> list[StoreCheck]:
    """The checks for a store; ``shared=False`` leaves out those that need shared storage,
    ``ledger=False`` those of :class:`~acpwire.store.OwnerLedger`."""
    return [c for c in STORE_CHECKS if (shared or not c.shared) and (ledger or not c.ledger)]
