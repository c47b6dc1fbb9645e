"""What every group of store checks is built on: the check itself, the decorators that
declare checks into a group, and the helpers the checks share.

A group (:class:`CheckGroup`) keeps its checks in the order its module declares them;
the package's ``__init__`` joins the groups in a fixed order, so the order of
:data:`~acpwire.testing.store_suite.STORE_CHECKS` does not hang on import order.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ...store import OwnerLedger, SessionRecord, SessionStore

Opener = Callable[[], SessionStore]
"""Returns a new store instance (over the same storage, for ``shared`` checks)."""

StoreBody = Callable[[SessionStore], Awaitable[None]]
OpenerBody = Callable[[Opener], Awaitable[None]]


@dataclass(frozen=True)
class StoreCheck:
    """One behaviour of a store, named after what a user of the store observes."""

    name: str
    body: StoreBody | OpenerBody
    opens: bool = False
    """The body takes the opener (it opens and closes stores itself)."""
    shared: bool = False
    """The body needs two stores over the same storage."""
    ledger: bool = False
    """The store must be an :class:`~acpwire.store.OwnerLedger`."""

    def __str__(self) -> str:
        return self.name

    async def run(self, opener: Opener) -> None:
        """Run the check; raises ``AssertionError`` (or the store's error) if the store fails it."""
        if self.opens:
            await _as_opener_body(self.body)(opener)
            return
        store = opener()
        try:
            await _as_store_body(self.body)(store)
        finally:
            await store.aclose()


def _as_store_body(body: StoreBody | OpenerBody) -> StoreBody:
    return body  # type: ignore[return-value]  # StoreCheck.opens says which it is


def _as_opener_body(body: StoreBody | OpenerBody) -> OpenerBody:
    return body  # type: ignore[return-value]  # StoreCheck.opens says which it is


@dataclass
class CheckGroup:
    """The checks of one module, in the order the module declares them.

    Used as a decorator, it declares a check that is given one new store (closed after
    it); :meth:`opening` declares one that is given the opener.
    """

    checks: list[StoreCheck] = field(default_factory=list)

    def __call__(self, body: StoreBody) -> StoreBody:
        self.checks.append(StoreCheck(body.__name__, body))
        return body

    def opening(self, *, shared: bool, ledger: bool = False) -> Callable[[OpenerBody], OpenerBody]:
        """Declare a check that opens (and closes) its stores itself."""

        def register(body: OpenerBody) -> OpenerBody:
            self.checks.append(
                StoreCheck(body.__name__, body, opens=True, shared=shared, ledger=ledger)
            )
            return body

        return register


# --------------------------------------------------------------------------- helpers


def as_ledger(store: SessionStore) -> OwnerLedger:
    assert isinstance(store, OwnerLedger), f"{type(store).__name__} is not an OwnerLedger"
    return store


@contextmanager
def raises(kind: type[BaseException], match: str | None = None) -> Generator[None, None, None]:
    """``pytest.raises`` without pytest: the suite runs under any test runner."""
    try:
        yield
    except kind as exc:
        if match is not None and not re.search(match, str(exc)):
            raise AssertionError(
                f"{kind.__name__} raised, but {str(exc)!r} does not match {match!r}"
            ) from exc
        return
    raise AssertionError(f"{kind.__name__} was not raised")


def chunk(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def record(session_id: str, cwd: str = "/work/project", **fields: Any) -> SessionRecord:
    return SessionRecord(session_id=session_id, cwd=cwd, **fields)


async def listed_ids(
    store: SessionStore, *, cwd: str | None = None, owner: str | None = None
) -> list[str]:
    """The ids of every listed session, in list order (one page: the suite stores few)."""
    sessions, cursor = await store.list_sessions(cwd=cwd, owner=owner, limit=1000)
    assert cursor is None
    return [s.session_id for s in sessions]


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")
