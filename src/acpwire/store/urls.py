"""One way to name a session store: a URL or a path, parsed here and nowhere else.

``AgentApp(store=...)``, ``acp demo-agent --store`` and ``acp serve --store``
all go through :func:`open_store`:

==============================  ==============================================
``memory:``                     :class:`~acpwire.store.MemorySessionStore`
``sqlite:///abs/path.db``       SQLite file ``/abs/path.db`` (``%xx`` escapes decoded)
``sqlite:relative/path.db``     SQLite file relative to the working folder
``sqlite::memory:``             private in-memory SQLite database
``postgresql://user@host/db``   :class:`~acpwire.store.postgres.PostgresSessionStore`
(also ``postgres://``)          (needs ``pip install 'acpwire[postgres]'``)
anything else                   a path: SQLite file there (``~`` expanded)
==============================  ==============================================

A string is read as a URL only when it starts with one of these schemes (so
``C:\\sessions.db`` stays a Windows path); any other ``scheme://`` is refused
rather than taken for a file name. :data:`STORE_ENV` (``ACPWIRE_STORE``) names
the store wherever the user did not: ``AgentApp(store=True)`` and the CLI
without ``--store``.
"""

from __future__ import annotations

import os
import re
from typing import Final

from .base import SessionStore

__all__ = ["STORE_ENV", "open_store", "store_from_env"]

STORE_ENV: Final = "ACPWIRE_STORE"
"""Environment variable naming the store (a URL or path) where none is given."""

_URL_RE: Final = re.compile(r"(memory|sqlite|postgres|postgresql):", re.I)
_OTHER_URL_RE: Final = re.compile(r"[a-z][a-z0-9+.-]+://", re.I)


def _sqlite_path(rest: str, url: str) -> str:
    from urllib.parse import unquote  # (only URLs need it: a plain path starts faster)

    if rest == ":memory:":
        return rest
    if rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        if authority not in ("", "localhost") or not slash:
            raise ValueError(
                f"store URL {url!r}: a SQLite URL has no host; write sqlite:///absolute/path "
                "or sqlite:relative/path"
            )
        path = unquote("/" + path)
        if re.match(r"/[A-Za-z]:[/\\]", path):  # sqlite:///C:/x.db on Windows
            path = path[1:]
        return path
    if not rest:
        raise ValueError(f"store URL {url!r} names no file")
    return unquote(rest)


def open_store(url: str | os.PathLike[str]) -> SessionStore:
    """The store a URL or path names (see the module docstring for the forms).

    Nothing is opened yet: stores connect on first use. Raises ``ValueError``
    for a URL this function cannot read and ``ImportError`` (with the install
    hint) when the PostgreSQL driver is missing.
    """
    if not isinstance(url, str):
        from .sqlite import SqliteSessionStore

        return SqliteSessionStore(url)
    text = url.strip()
    if not text:
        raise ValueError(
            "empty store URL: give a path, sqlite:///path, memory: or postgresql://..."
        )
    match = _URL_RE.match(text)
    if match is None:
        if _OTHER_URL_RE.match(text):
            scheme = text.split(":", 1)[0]
            raise ValueError(
                f"unknown store URL scheme {scheme!r}: use a path, sqlite:///path, "
                "memory: or postgresql://..."
            )
        from .sqlite import SqliteSessionStore

        return SqliteSessionStore(os.path.expanduser(text))
    scheme = match.group(1).lower()
    rest = text[match.end() :]
    if scheme == "memory":
        if rest not in ("", "//"):
            raise ValueError(f"store URL {url!r}: memory: takes nothing after the colon")
        from .memory import MemorySessionStore

        return MemorySessionStore()
    if scheme == "sqlite":
        from .sqlite import SqliteSessionStore

        return SqliteSessionStore(_sqlite_path(rest, url))
    from .postgres import PostgresSessionStore

    return PostgresSessionStore(text)


def store_from_env(default: str | os.PathLike[str]) -> SessionStore:
    """The store ``$ACPWIRE_STORE`` names, else the one ``default`` names."""
    named = os.environ.get(STORE_ENV, "").strip()
    return open_store(named or default)
