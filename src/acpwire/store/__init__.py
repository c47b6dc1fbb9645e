"""Session stores: where an agent keeps its sessions and their history.

One interface (:class:`SessionStore`, semantics in :mod:`acpwire.store.base`),
three stores: :class:`MemorySessionStore` (this process only),
:class:`SqliteSessionStore` (one file, several processes) and
:class:`~acpwire.store.postgres.PostgresSessionStore` (a database shared by
many workers; the ``postgres`` extra, imported only when used). A store is
named by a URL or a path through :func:`open_store`. The behaviour suite every
store passes, yours included, is :mod:`acpwire.testing.store_suite`.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
from ._clock import utc_now
from .base import (
    OwnerLedger,
    SessionExistsError,
    SessionNotFoundError,
    SessionRecord,
    SessionStore,
    StoreClosedError,
)

if TYPE_CHECKING:
    from .memory import MemorySessionStore
    from .paths import DATA_DIR_ENV, default_data_dir, default_store_path
    from .postgres import PostgresSessionStore
    from .sqlite import SqliteSessionStore
    from .urls import STORE_ENV, open_store, store_from_env

# The stores themselves load on first use: an agent imports the one it opens
# (start-up time is part of spawn-to-session), PostgreSQL only with its extra.
__getattr__ = lazy_getattr(
    __name__,
    {
        "DATA_DIR_ENV": "paths",
        "MemorySessionStore": "memory",
        "PostgresSessionStore": "postgres",
        "STORE_ENV": "urls",
        "SqliteSessionStore": "sqlite",
        "default_data_dir": "paths",
        "default_store_path": "paths",
        "open_store": "urls",
        "store_from_env": "urls",
    },
)

__all__ = [
    "DATA_DIR_ENV",
    "STORE_ENV",
    "MemorySessionStore",
    "OwnerLedger",
    "PostgresSessionStore",
    "SessionExistsError",
    "SessionNotFoundError",
    "SessionRecord",
    "SessionStore",
    "SqliteSessionStore",
    "StoreClosedError",
    "default_data_dir",
    "default_store_path",
    "open_store",
    "store_from_env",
    "utc_now",
]
