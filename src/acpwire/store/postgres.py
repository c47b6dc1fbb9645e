"""A session store in PostgreSQL, shared by every worker of a scaled-out agent service.

Needs the ``postgres`` extra (``pip install 'acpwire[postgres]'``), which
brings asyncpg, and PostgreSQL 12 or newer. Why asyncpg rather than psycopg 3: it is asyncio-native (no
thread hop per query), has its connection pool built in, speaks the binary
protocol and caches prepared statements per connection, which is what a
thousand ``session/new`` a second per worker asks for; it ships wheels for
CPython 3.10 to 3.13 on Linux, macOS and Windows. psycopg 3 would need its
separate pool package and its C build for comparable speed.

Layout: the tables live in their own PostgreSQL schema (``acpwire`` unless
``schema=`` says otherwise), so they never meet an application's tables and a
test can use a throwaway schema. The store creates the schema and its tables
on first use and migrates them forward (``schema_version`` table), under an
advisory lock so that workers starting together migrate once; a database
migrated by a newer acpwire is refused with ``RuntimeError``.

Durability: every write is one transaction, committed when the call returns.
By default the store's connections set ``synchronous_commit = off``: a commit
is acknowledged once PostgreSQL has it, before its WAL reaches the disk. What
was committed survives the death of any agent worker (the failure a scaled-out
service has to ride out); a crash of the database server itself may lose the
last commits (at most three ``wal_writer_delay``, 600 ms by default) and never
corrupts anything. That is the promise of the SQLite store in WAL mode too,
and it is what lets one worker create a thousand sessions a second on a disk
whose fsync takes milliseconds. ``synchronous_commit=None`` keeps the server's
own setting (``on`` unless configured), so every commit waits for its fsync; a
``synchronous_commit`` in the URL's query wins over both.

Two workers, one session: each session row carries the sequence number of its
last history entry. :meth:`PostgresSessionStore.extend_many` is one statement
(one round trip, its own transaction) that locks the rows of the sessions it
appends to (``FOR UPDATE``, in session id order, so two batches never
deadlock), numbers the new entries after the last one, bumps the sessions and
inserts the entries. Appends to one session are therefore serialised across processes,
numbered in commit order, and a reader only ever sees a prefix of the final
history: never a gap that a slower transaction fills in later.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import re
from collections.abc import (
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from types import ModuleType
from typing import Any, Final, Protocol, TypeVar, cast
from urllib.parse import parse_qs, urlsplit, urlunsplit

from .._waits import within
from ._clock import Clock
from ._codec import (
    COLUMNS,
    Row,
    check_principal,
    decode,
    dumps_updates,
    encode,
    list_query,
    loads_updates,
    page,
    touched,
)
from .base import OwnerLedger, SessionExistsError, SessionRecord, SessionStore, StoreClosedError
from .streams import StoredStream, StreamLog

__all__ = ["DEFAULT_SCHEMA", "SCHEMA_VERSION", "PostgresSessionStore"]

_T = TypeVar("_T")

SCHEMA_VERSION: Final = 2
"""Version of the PostgreSQL tables this module writes."""

DEFAULT_SCHEMA: Final = "acpwire"
"""The PostgreSQL schema (namespace) the tables live in by default."""

INSTALL_HINT: Final = "the PostgreSQL session store needs asyncpg: pip install 'acpwire[postgres]'"

_IDENTIFIER_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_COLUMN_LIST: Final = ", ".join(COLUMNS)
_PLACEHOLDERS: Final = ", ".join(f"${i}" for i in range(1, len(COLUMNS) + 1))
_RETRIES: Final = 3
"""Attempts of a batch that PostgreSQL aborted for a deadlock or serialisation failure."""


def _migrations(s: str) -> dict[int, tuple[str, ...]]:
    """Statements from version N-1 to N, for tables in schema ``s`` (already quoted)."""
    return {
        1: (
            f"""
            CREATE TABLE {s}.sessions (
                session_id text PRIMARY KEY,
                cwd text NOT NULL,
                additional_directories text NOT NULL DEFAULT '[]',  -- JSON array
                title text,
                created_at text NOT NULL,                            -- ISO 8601
                updated_at text NOT NULL,                            -- ISO 8601
                updated_key bigint NOT NULL,                         -- microseconds since epoch
                mode_id text,
                config_values text NOT NULL DEFAULT '{{}}',          -- JSON object
                meta text NOT NULL DEFAULT '{{}}',                   -- JSON object
                owner text,                                          -- principal
                last_seq bigint NOT NULL DEFAULT 0                   -- seq of the last update
            )
            """,
            f"CREATE INDEX sessions_by_recency ON {s}.sessions (updated_key DESC, session_id DESC)",
            f"CREATE INDEX sessions_by_cwd ON {s}.sessions (cwd)",
            f"CREATE INDEX sessions_by_owner ON {s}.sessions (owner)",
            f"""
            CREATE TABLE {s}.updates (
                session_id text NOT NULL REFERENCES {s}.sessions (session_id) ON DELETE CASCADE,
                seq bigint NOT NULL,
                payload text NOT NULL,                               -- compact JSON object
                PRIMARY KEY (session_id, seq)
            )
            """,
        ),
        # The remote endpoint's streams (acp serve --resumable; store/streams.py).
        2: (
            f"""
            CREATE TABLE {s}.streams (
                connection_id text NOT NULL,
                stream text NOT NULL,                                -- '' or a session id
                principal text NOT NULL,
                worker text NOT NULL,
                mode text NOT NULL,                                  -- http or websocket
                high bigint NOT NULL,                                -- last cursor kept
                turns text NOT NULL DEFAULT '{{}}',                  -- JSON object
                updated_key bigint NOT NULL,                         -- microseconds since epoch
                PRIMARY KEY (connection_id, stream)
            )
            """,
            f"CREATE INDEX streams_by_age ON {s}.streams (updated_key)",
            f"""
            CREATE TABLE {s}.stream_messages (
                connection_id text NOT NULL,
                stream text NOT NULL,
                seq bigint NOT NULL,                                 -- the cursor
                body text NOT NULL,                                  -- the message as written
                PRIMARY KEY (connection_id, stream, seq)
            )
            """,
        ),
    }


# --------------------------------------------------------------------------- the driver, typed


class _Record(Protocol):
    def __getitem__(self, index: int, /) -> Any: ...
    def __iter__(self) -> Iterator[Any]: ...


class _Transaction(Protocol):
    async def __aenter__(self) -> object: ...
    async def __aexit__(self, *exc_info: object) -> object: ...


class _Connection(Protocol):
    async def execute(self, query: str, *args: object) -> str: ...
    async def fetch(self, query: str, *args: object) -> list[_Record]: ...
    async def fetchrow(self, query: str, *args: object) -> _Record | None: ...
    async def fetchval(self, query: str, *args: object) -> Any: ...
    def transaction(self) -> _Transaction: ...


class _Single(_Connection, Protocol):
    async def close(self) -> None: ...


class _Acquire(Protocol):
    async def __aenter__(self) -> _Connection: ...
    async def __aexit__(self, *exc_info: object) -> object: ...


class _Pool(Protocol):
    def acquire(self) -> _Acquire: ...
    async def close(self) -> None: ...
    def terminate(self) -> None: ...


class _Driver(Protocol):
    def connect(
        self, dsn: str, *, timeout: float, server_settings: dict[str, str]
    ) -> Awaitable[_Single]: ...

    def create_pool(
        self,
        dsn: str,
        *,
        min_size: int,
        max_size: int,
        command_timeout: float,
        timeout: float,
        server_settings: dict[str, str],
        reset: Callable[[Any], Awaitable[None]],
    ) -> Awaitable[_Pool]: ...


def _driver() -> tuple[_Driver, tuple[type[BaseException], ...]]:
    """asyncpg (typed through the Protocols above) and the errors worth retrying a batch for."""
    try:
        module: ModuleType = importlib.import_module("asyncpg")
    except ImportError as exc:
        raise ImportError(INSTALL_HINT) from exc
    errors = module.exceptions
    retry = (errors.DeadlockDetectedError, errors.SerializationError)
    return cast("_Driver", module), retry


async def _reset(conn: _Connection) -> None:
    """Nothing to reset when a connection goes back to the pool.

    asyncpg's default reset sends ``SELECT pg_advisory_unlock_all(); CLOSE ALL;
    UNLISTEN *; RESET ALL`` on every release: a second round trip for each
    one-statement call (``session/new`` per second roughly halved). This store
    leaves none of that state behind (no session-level locks, cursors, LISTEN or
    SET; its settings are connection parameters). A transaction an interrupted
    call left open is rolled back by asyncpg itself before this hook runs.
    """


def _query_keys(dsn: str) -> set[str]:
    try:
        return set(parse_qs(urlsplit(dsn).query))
    except ValueError:
        return set()


def redact(dsn: str) -> str:
    """``dsn`` with its password replaced by ``***`` (for messages and ``repr``)."""
    try:
        parts = urlsplit(dsn)
        if parts.password is None:
            return dsn
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        return "postgresql://(unreadable URL)"


_WORKER_LOCKS: Final = 74021
"""First key of the advisory locks workers hold while they live (the second: a hash of
the worker's name)."""


class PostgresSessionStore(SessionStore, OwnerLedger, StreamLog):
    """A :class:`~acpwire.store.SessionStore` in a PostgreSQL database (see the module docstring).

    ``dsn`` is a libpq URL (``postgresql://user:password@host:port/database``,
    query parameters as asyncpg reads them). The pool of ``min_size`` to
    ``max_size`` connections opens, and the tables are created or migrated,
    on first use. ``timeout`` bounds connecting and each statement, in seconds.
    ``synchronous_commit`` is set on the store's connections (None: the
    server's setting; see the module docstring). Raises ``ImportError`` with
    the install hint at once if asyncpg is missing.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 30.0,
        synchronous_commit: str | None = "off",
    ) -> None:
        if not _IDENTIFIER_RE.fullmatch(schema):
            raise ValueError(
                f"schema must be a plain identifier (letters, digits, _), got {schema!r}"
            )
        self._driver, self._retry_errors = _driver()
        self._dsn = dsn
        self._schema = schema
        self._min_size, self._max_size, self._timeout = min_size, max_size, timeout
        self._server_settings: dict[str, str] = {}
        if synchronous_commit is not None and "synchronous_commit" not in _query_keys(dsn):
            self._server_settings["synchronous_commit"] = synchronous_commit
        self._clock = Clock()
        self._pool: _Pool | None = None
        self._opening: asyncio.Lock | None = None
        self._closed = False
        self._alive: _Single | None = None
        """The connection holding this process's worker lock (StreamLog)."""
        self._starting: asyncio.Lock | None = None
        s = f'"{schema}"'
        self._s = s
        self._sql_select = f"SELECT {_COLUMN_LIST} FROM {s}.sessions WHERE session_id = $1"
        self._sql_create = (
            f"INSERT INTO {s}.sessions ({_COLUMN_LIST}) VALUES ({_PLACEHOLDERS}) "
            "ON CONFLICT (session_id) DO NOTHING RETURNING session_id"
        )
        self._sql_update = f"""
            INSERT INTO {s}.sessions AS cur ({_COLUMN_LIST}) VALUES ({_PLACEHOLDERS})
            ON CONFLICT (session_id) DO UPDATE SET
                cwd = EXCLUDED.cwd,
                additional_directories = EXCLUDED.additional_directories,
                title = EXCLUDED.title,
                updated_at = EXCLUDED.updated_at,
                updated_key = EXCLUDED.updated_key,
                mode_id = EXCLUDED.mode_id,
                config_values = EXCLUDED.config_values,
                meta = EXCLUDED.meta,
                owner = COALESCE(cur.owner, EXCLUDED.owner)
            RETURNING {", ".join(f"cur.{c}" for c in COLUMNS)}
            """
        # One statement, so one round trip and one implicit transaction: lock the
        # sessions' rows in id order, number the entries after each session's last
        # one, bump the sessions and insert. $1..$3: one element per entry (session,
        # position within its session from 1, payload); $4..$6: one per session.
        self._sql_append = f"""
            WITH locked AS MATERIALIZED (
                SELECT session_id, last_seq FROM {s}.sessions
                WHERE session_id = ANY($4::text[]) ORDER BY session_id FOR UPDATE
            ), bumped AS (
                UPDATE {s}.sessions AS cur
                SET last_seq = locked.last_seq + v.n, updated_at = v.stamp, updated_key = v.key
                FROM locked JOIN (
                    SELECT * FROM unnest($4::text[], $5::text[], $6::bigint[]) AS v0(session_id, stamp, key)
                    JOIN (SELECT session_id, count(*) AS n FROM unnest($1::text[]) AS e(session_id)
                          GROUP BY session_id) AS counts USING (session_id)
                ) AS v USING (session_id)
                WHERE cur.session_id = locked.session_id
                RETURNING cur.session_id, locked.last_seq AS base
            ), inserted AS (
                INSERT INTO {s}.updates (session_id, seq, payload)
                SELECT e.session_id, bumped.base + e.pos, e.payload
                FROM unnest($1::text[], $2::bigint[], $3::text[]) AS e(session_id, pos, payload)
                JOIN bumped USING (session_id)
            )
            SELECT session_id FROM bumped
            """
        self._sql_known = f"SELECT session_id FROM {s}.sessions WHERE session_id = ANY($1::text[])"
        self._sql_history = f"SELECT payload FROM {s}.updates WHERE session_id = $1 ORDER BY seq"
        self._sql_delete = f"DELETE FROM {s}.sessions WHERE session_id = $1"
        # Under READ COMMITTED an UPDATE that waited for another claim re-reads the row,
        # so COALESCE sees the winner's owner: one statement, no lost claim.
        self._sql_claim = (
            f"UPDATE {s}.sessions SET owner = COALESCE(owner, $2) WHERE session_id = $1 "
            "RETURNING owner"
        )
        self._sql_owners = (
            f"SELECT session_id, owner FROM {s}.sessions WHERE session_id = ANY($1::text[])"
        )
        # StreamLog. One statement: the new messages, the stream's row, and what falls out
        # of its retention ($9: keep); the DELETE does not see this statement's inserts.
        self._sql_keep_stream = f"""
            WITH added AS (
                INSERT INTO {s}.stream_messages (connection_id, stream, seq, body)
                SELECT $1, $2, * FROM unnest($3::bigint[], $4::text[])
            ), kept AS (
                INSERT INTO {s}.streams AS cur
                    (connection_id, stream, principal, worker, mode, high, turns, updated_key)
                VALUES ($1, $2, $5, $6, $7, $8, $10, $11)
                ON CONFLICT (connection_id, stream) DO UPDATE SET
                    worker = EXCLUDED.worker, high = EXCLUDED.high, turns = EXCLUDED.turns,
                    updated_key = EXCLUDED.updated_key
            )
            DELETE FROM {s}.stream_messages
            WHERE connection_id = $1 AND stream = $2 AND seq <= $8 - $9
            """
        self._sql_stream = f"""
            SELECT principal, worker, mode, high, turns,
                (SELECT coalesce(min(seq), 0) FROM {s}.stream_messages m
                 WHERE m.connection_id = $1 AND m.stream = $2)
            FROM {s}.streams WHERE connection_id = $1 AND stream = $2
            """
        self._sql_stream_after = (
            f"SELECT seq, body FROM {s}.stream_messages "
            "WHERE connection_id = $1 AND stream = $2 AND seq > $3 ORDER BY seq"
        )
        self._sql_forget_connection = (
            f"WITH gone AS (DELETE FROM {s}.streams WHERE connection_id = $1) "
            f"DELETE FROM {s}.stream_messages WHERE connection_id = $1"
        )
        self._sql_sweep = f"""
            WITH old AS (DELETE FROM {s}.streams WHERE updated_key < $1
                         RETURNING connection_id, stream)
            DELETE FROM {s}.stream_messages m USING old
            WHERE m.connection_id = old.connection_id AND m.stream = old.stream
            """

    @property
    def schema(self) -> str:
        """The PostgreSQL schema holding the tables."""
        return self._schema

    def __repr__(self) -> str:
        return f"PostgresSessionStore({redact(self._dsn)!r}, schema={self._schema!r})"

    # -- plumbing ------------------------------------------------------------

    async def _get_pool(self) -> _Pool:
        if self._closed:
            raise StoreClosedError
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                pool = await self._driver.create_pool(
                    self._dsn,
                    min_size=self._min_size,
                    max_size=self._max_size,
                    command_timeout=self._timeout,
                    timeout=self._timeout,
                    server_settings=self._server_settings,
                    reset=_reset,
                )
                try:
                    async with pool.acquire() as conn:
                        await self._migrate(conn)
                except BaseException:
                    pool.terminate()
                    raise
                if self._closed:  # closed while opening
                    await pool.close()
                    raise StoreClosedError
                self._pool = pool
        return self._pool

    async def _migrate(self, conn: _Connection) -> None:
        s = self._s
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext($1))", f"acpwire:{s}")
            if await conn.fetchval("SELECT to_regnamespace($1)", s) is None:
                await conn.execute(f"CREATE SCHEMA {s}")
            await conn.execute(
                f"CREATE TABLE IF NOT EXISTS {s}.schema_version (version integer NOT NULL)"
            )
            found = await conn.fetchval(f"SELECT max(version) FROM {s}.schema_version") or 0
            if found > SCHEMA_VERSION:
                raise RuntimeError(
                    f"session tables in schema {self._schema!r} are at version {found}, newer "
                    f"than this acpwire supports ({SCHEMA_VERSION}); upgrade acpwire"
                )
            if found == SCHEMA_VERSION:
                return
            migrations = _migrations(s)
            for version in range(found + 1, SCHEMA_VERSION + 1):
                for statement in migrations[version]:
                    await conn.execute(statement)
            await conn.execute(f"DELETE FROM {s}.schema_version")
            await conn.execute(
                f"INSERT INTO {s}.schema_version (version) VALUES ($1)", SCHEMA_VERSION
            )

    async def _with_conn(self, work: Callable[[_Connection], Awaitable[_T]]) -> _T:
        pool = await self._get_pool()
        async with pool.acquire() as conn:
            return await work(conn)

    # -- SessionStore ----------------------------------------------------------

    async def create(self, record: SessionRecord) -> SessionRecord:
        row = encode(record)

        async def work(conn: _Connection) -> SessionRecord:
            if await conn.fetchval(self._sql_create, *row.values()) is None:
                raise SessionExistsError(row.session_id)
            return decode(row)

        return await self._with_conn(work)

    async def get(self, session_id: str) -> SessionRecord | None:
        async def work(conn: _Connection) -> SessionRecord | None:
            found = await conn.fetchrow(self._sql_select, session_id)
            return None if found is None else decode(tuple(found))

        return await self._with_conn(work)

    async def update(self, record: SessionRecord, *, touch: bool = True) -> SessionRecord:
        row = encode(record)
        stored = touched(row, self._clock) if touch else row

        async def work(conn: _Connection) -> SessionRecord:
            found = await conn.fetchrow(self._sql_update, *stored.values())
            assert found is not None  # an upsert always returns its row
            return decode(tuple(found))

        return await self._with_conn(work)

    async def extend_many(self, batch: Mapping[str, Sequence[dict[str, Any]]]) -> set[str]:
        encoded = {sid: dumps_updates(updates) for sid, updates in batch.items()}
        entry_ids: list[str] = []
        positions: list[int] = []
        payloads: list[str] = []
        session_ids: list[str] = []
        stamps: list[str] = []
        keys: list[int] = []
        for sid, texts in encoded.items():
            if not texts:
                continue
            entry_ids.extend([sid] * len(texts))
            positions.extend(range(1, len(texts) + 1))
            payloads.extend(texts)
            key, stamp = self._clock.now()
            session_ids.append(sid)
            stamps.append(stamp)
            keys.append(key)
        quiet = [sid for sid, texts in encoded.items() if not texts]

        async def work(conn: _Connection) -> set[str]:
            known: set[str] = set()
            if session_ids:
                args = (entry_ids, positions, payloads, session_ids, stamps, keys)
                known |= {r[0] for r in await conn.fetch(self._sql_append, *args)}
            if quiet:  # nothing to append: only whether they exist
                known |= {r[0] for r in await conn.fetch(self._sql_known, quiet)}
            return set(encoded) - known

        for attempt in range(1, _RETRIES + 1):
            try:
                return await self._with_conn(work)
            except self._retry_errors:
                if attempt == _RETRIES:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def history(self, session_id: str) -> list[dict[str, Any]]:
        async def work(conn: _Connection) -> list[dict[str, Any]]:
            return loads_updates([r[0] for r in await conn.fetch(self._sql_history, session_id)])

        return await self._with_conn(work)

    async def list_sessions(
        self,
        *,
        cwd: str | None = None,
        owner: str | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> tuple[list[SessionRecord], str | None]:
        sql, params, limit = list_query(
            f"{self._s}.sessions",
            cwd=cwd,
            owner=owner,
            cursor=cursor,
            limit=limit,
            placeholder=lambda n: f"${n}",
        )

        async def work(conn: _Connection) -> tuple[list[SessionRecord], str | None]:
            return page(_rows(await conn.fetch(sql, *params)), limit)

        return await self._with_conn(work)

    async def delete(self, session_id: str) -> None:
        async def work(conn: _Connection) -> None:
            await conn.execute(self._sql_delete, session_id)  # the history goes by cascade

        await self._with_conn(work)

    async def claim_owner(self, session_id: str, principal: str) -> str | None:
        principal = check_principal(principal)

        async def work(conn: _Connection) -> str | None:
            owner: str | None = await conn.fetchval(self._sql_claim, session_id, principal)
            return owner

        return await self._with_conn(work)

    async def owners_of(self, session_ids: Collection[str]) -> dict[str, str | None]:
        ids = list(dict.fromkeys(session_ids))

        async def work(conn: _Connection) -> dict[str, str | None]:
            return {r[0]: r[1] for r in await conn.fetch(self._sql_owners, ids)}

        return await self._with_conn(work)

    # -- StreamLog (store/streams.py) ----------------------------------------------------

    async def worker_started(self, worker: str) -> None:
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:  # one lock connection, whoever else is waiting for it
            if self._alive is not None:
                return
            await self._get_pool()  # the tables
            conn = await self._driver.connect(
                self._dsn, timeout=self._timeout, server_settings=self._server_settings
            )
            try:
                # Never waits: a worker's name is random, so its lock is free unless taken.
                got = await conn.fetchval(
                    "SELECT pg_try_advisory_lock($1, hashtext($2))", _WORKER_LOCKS, worker
                )
                if not got:
                    raise RuntimeError(f"worker {worker}'s liveness lock is already held")
            except BaseException:
                await conn.close()
                raise
            if self._closed:
                await conn.close()
                return
            self._alive = conn

    async def worker_alive(self, worker: str) -> bool:
        # Whoever holds the lock is alive; a lock this call could take was free: taken and
        # given back in the same statement (the pool does not reset connections).
        sql = (
            "SELECT CASE WHEN pg_try_advisory_lock($1, hashtext($2)) "
            "THEN NOT pg_advisory_unlock($1, hashtext($2)) ELSE true END"
        )

        async def work(conn: _Connection) -> bool:
            return bool(await conn.fetchval(sql, _WORKER_LOCKS, worker))

        return await self._with_conn(work)

    async def keep_stream(
        self,
        connection_id: str,
        stream: str,
        *,
        principal: str,
        worker: str,
        mode: str,
        entries: Sequence[tuple[int, bytes]],
        turns: str,
        keep: int,
    ) -> None:
        seqs = [seq for seq, _ in entries]
        bodies = [body.decode("utf-8", "replace") for _, body in entries]
        high = seqs[-1] if seqs else 0
        key, _ = self._clock.now()
        args = (
            connection_id,
            stream,
            seqs,
            bodies,
            principal,
            worker,
            mode,
            high,
            keep,
            turns,
            key,
        )

        async def work(conn: _Connection) -> None:
            await conn.execute(self._sql_keep_stream, *args)

        await self._with_conn(work)

    async def stored_stream(self, connection_id: str, stream: str) -> StoredStream | None:
        async def work(conn: _Connection) -> StoredStream | None:
            row = await conn.fetchrow(self._sql_stream, connection_id, stream)
            if row is None:
                return None
            principal, worker, mode, high, turns, low = tuple(row)
            return StoredStream(principal, worker, mode, high, low, turns)

        return await self._with_conn(work)

    async def stream_after(
        self, connection_id: str, stream: str, after: int
    ) -> list[tuple[int, bytes]]:
        async def work(conn: _Connection) -> list[tuple[int, bytes]]:
            rows = await conn.fetch(self._sql_stream_after, connection_id, stream, after)
            return [(r[0], r[1].encode("utf-8")) for r in rows]

        return await self._with_conn(work)

    async def forget_connection(self, connection_id: str) -> None:
        async def work(conn: _Connection) -> None:
            await conn.execute(self._sql_forget_connection, connection_id)

        await self._with_conn(work)

    async def sweep_streams(self, older_than: float) -> None:
        key, _ = self._clock.now()
        cutoff = key - int(older_than * 1_000_000)

        async def work(conn: _Connection) -> None:
            await conn.execute(self._sql_sweep, cutoff)

        await self._with_conn(work)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        alive, self._alive = self._alive, None
        if alive is not None:
            with contextlib.suppress(Exception):
                await within(alive.close(), self._timeout)
        pool, self._pool = self._pool, None
        if pool is None:
            return
        try:
            await within(pool.close(), self._timeout)
        except (asyncio.TimeoutError, OSError):
            pool.terminate()


def _rows(records: Iterable[_Record]) -> list[Row]:
    return [Row(*tuple(r)) for r in records]
