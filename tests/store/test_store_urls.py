"""One way to name a store: open_store(URL or path), $ACPWIRE_STORE, AgentApp(store=...)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from acpwire.agent import AgentApp
from acpwire.store import (
    DATA_DIR_ENV,
    STORE_ENV,
    MemorySessionStore,
    PostgresSessionStore,
    SqliteSessionStore,
    open_store,
    store_from_env,
)


def sqlite_path(url: str | Path) -> object:
    store = open_store(url)
    assert isinstance(store, SqliteSessionStore)
    return store.path


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("/var/lib/agent/sessions.db", Path("/var/lib/agent/sessions.db")),
        ("relative/sessions.db", Path("relative/sessions.db")),
        ("sqlite:///var/lib/agent/sessions.db", "/var/lib/agent/sessions.db"),
        ("sqlite://localhost/srv/s.db", "/srv/s.db"),
        ("sqlite:///tmp/with%20space.db", "/tmp/with space.db"),
        ("SQLite:///tmp/case.db", "/tmp/case.db"),
        ("sqlite:relative/s.db", "relative/s.db"),
        ("sqlite::memory:", ":memory:"),
        ("sqlite:///C:/Users/me/s.db", "C:/Users/me/s.db"),
        ("  sqlite:///trimmed.db  ", "/trimmed.db"),
    ],
)
def test_paths_and_sqlite_urls_name_a_sqlite_file(url: str, path: str | Path) -> None:
    assert sqlite_path(url) == (path if path == ":memory:" else Path(path))


def test_a_path_object_and_a_home_path_name_sqlite_files() -> None:
    assert sqlite_path(Path("x/y.db")) == Path("x/y.db")
    assert sqlite_path("~/sessions.db") == Path.home() / "sessions.db"


def test_a_windows_drive_path_is_a_path_not_a_url_scheme() -> None:
    assert sqlite_path("C:\\agent\\sessions.db") == Path("C:\\agent\\sessions.db")


@pytest.mark.parametrize("url", ["memory:", "memory://", "MEMORY:"])
def test_memory_names_a_store_in_this_process(url: str) -> None:
    assert isinstance(open_store(url), MemorySessionStore)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "empty store URL"),
        ("   ", "empty store URL"),
        ("redis://cache/0", "unknown store URL scheme 'redis'"),
        ("mysql://db/sessions", "unknown store URL scheme 'mysql'"),
        ("sqlite:", "names no file"),
        ("sqlite://host/s.db", "has no host"),
        ("sqlite://", "has no host"),
        ("memory:somewhere", "takes nothing"),
    ],
)
def test_a_url_that_names_no_usable_store_is_refused(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        open_store(url)


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_a_postgresql_url_names_the_postgres_store_and_hides_its_password(scheme: str) -> None:
    store = open_store(f"{scheme}://agent:s3cret@db.internal:5432/sessions")
    assert isinstance(store, PostgresSessionStore)
    assert "s3cret" not in repr(store)
    assert "agent:***@db.internal:5432/sessions" in repr(store)


def test_without_the_driver_a_postgresql_url_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "asyncpg", None)  # as if not installed
    with pytest.raises(ImportError, match=r"pip install 'acpwire\[postgres\]'"):
        open_store("postgresql://localhost/sessions")


def test_the_environment_names_the_store_where_none_is_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(STORE_ENV, "memory:")
    assert isinstance(store_from_env(tmp_path / "default.db"), MemorySessionStore)
    monkeypatch.setenv(STORE_ENV, "  ")
    store = store_from_env(tmp_path / "default.db")
    assert isinstance(store, SqliteSessionStore) and store.path == tmp_path / "default.db"


async def test_agent_app_store_takes_a_url_a_path_true_or_a_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(STORE_ENV, raising=False)
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    default = AgentApp("My Agent!")
    assert isinstance(default.store, MemorySessionStore) and not default.durable

    per_app = AgentApp("My Agent!", store=True)
    assert isinstance(per_app.store, SqliteSessionStore) and per_app.durable
    assert per_app.store.path == tmp_path / "data" / "My-Agent.sqlite3"

    monkeypatch.setenv(STORE_ENV, f"sqlite:///{(tmp_path / 'env.db').as_posix().lstrip('/')}")
    from_env = AgentApp("a", store=True)
    assert isinstance(from_env.store, SqliteSessionStore)
    assert Path(from_env.store.path) == tmp_path / "env.db"
    explicit = AgentApp("a", store="memory:")
    assert isinstance(explicit.store, MemorySessionStore) and explicit.durable
    by_path = AgentApp("a", store=tmp_path / "p.db")
    assert isinstance(by_path.store, SqliteSessionStore) and by_path.durable
    mine = MemorySessionStore()
    assert AgentApp("a", store=mine).store is mine

    with pytest.raises(ValueError, match="unknown store URL scheme"):
        AgentApp("a", store="redis://cache")
    for app in (default, per_app, from_env, explicit, by_path):
        await app.aclose()
