"""How stores turn records into rows and back, and how ``session/list`` cursors look.

Every store goes through :func:`encode` before writing, so every store accepts
and rejects the same records with the same errors, whatever its backend would
tolerate: text fields are valid Unicode without NUL (PostgreSQL ``text``
refuses both), JSON fields are compact JSON text (lone surrogates kept as
``\\u`` escapes so the text is valid UTF-8), timestamps parse as ISO 8601.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, NamedTuple, cast

import msgspec

from ._clock import Clock, timestamp_key
from .base import SessionRecord

__all__ = [
    "COLUMNS",
    "Row",
    "check_limit",
    "decode",
    "decode_cursor",
    "dumps_updates",
    "encode",
    "list_query",
    "loads_updates",
    "page",
    "touched",
]


class Row(NamedTuple):
    """A validated, JSON-encoded :class:`SessionRecord`: one row of a ``sessions`` table.

    A named tuple rather than a frozen dataclass: one is made per write, and a
    tuple is built in one step instead of a ``__setattr__`` per field.
    """

    session_id: str
    cwd: str
    additional_directories: str
    title: str | None
    created_at: str
    updated_at: str
    updated_key: int
    mode_id: str | None
    config_values: str
    meta: str
    owner: str | None

    def values(self) -> tuple[Any, ...]:
        """The column values, in :data:`COLUMNS` order."""
        return tuple(self)


COLUMNS: Final = (
    "session_id",
    "cwd",
    "additional_directories",
    "title",
    "created_at",
    "updated_at",
    "updated_key",
    "mode_id",
    "config_values",
    "meta",
    "owner",
)
"""The columns of a sessions table, in :class:`Row` field order."""
assert COLUMNS == Row._fields


# --------------------------------------------------------------------------- JSON


# msgspec reads and writes; the json module (imported when first needed, not at an
# agent's start-up) only writes what msgspec cannot round-trip and reads what it refuses.
_msgspec_encode = msgspec.json.Encoder().encode
_msgspec_decode = msgspec.json.Decoder().decode
_json_encoders: tuple[Callable[[Any], str], Callable[[Any], str]] | None = None


def _json_encode(value: Any, *, ascii_only: bool = False) -> str:
    """Compact JSON by the json module (json.dumps with these options builds an encoder per call)."""
    global _json_encoders
    if _json_encoders is None:
        import json

        _json_encoders = (
            json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode,
            json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode,
        )
    return _json_encoders[1 if ascii_only else 0](value)


def _dumps(value: Any) -> str:
    """Compact JSON text, valid UTF-8 (UTF-8 characters kept unless that is impossible)."""
    if not value and type(value) in (dict, list):  # most records' lists and maps
        return "{}" if type(value) is dict else "[]"
    # msgspec first (several times faster); it writes what json would refuse (NaN as
    # null, sets, bytes, dates...), so its text counts only if it reads back as the
    # value itself. Otherwise json writes it, or raises what callers expect.
    try:
        data = _msgspec_encode(value)
        if _msgspec_decode(data) == value:
            return data.decode()
    except Exception:  # json below decides, with its own errors
        pass
    text = _json_encode(value)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: keep them as \u escapes
            text = _json_encode(value, ascii_only=True)
    return text


def _dumps_field(value: Any, what: str) -> str:
    try:
        return _dumps(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} is not JSON-serialisable: {exc}") from exc


def loads_updates(texts: Sequence[str]) -> list[dict[str, Any]]:
    """History payloads from their JSON texts, in one decoder call (replay reads 100,000s)."""
    joined = "[" + ",".join(texts) + "]"
    try:
        return cast("list[dict[str, Any]]", msgspec.json.decode(joined))
    except msgspec.DecodeError:  # lone surrogates, kept as \u escapes, which msgspec refuses
        import json

        return cast("list[dict[str, Any]]", json.loads(joined))


def dumps_updates(updates: Iterable[object]) -> list[str]:
    """History payloads as JSON text; ``TypeError`` unless each is a JSON object."""
    texts: list[str] = []
    for update in updates:
        if not isinstance(update, dict):
            raise TypeError(
                "a session update must be a dict (the wire `update` object), "
                f"got {type(update).__name__}"
            )
        texts.append(_dumps_field(update, "session update"))
    return texts


# --------------------------------------------------------------------------- records


def _check_text(value: object, what: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        kind = "a string or None" if optional else "a string"
        raise TypeError(f"{what} must be {kind}, got {type(value).__name__}")
    if "\x00" in value:
        raise ValueError(f"{what} must not contain NUL characters")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"{what} must be valid Unicode (it holds a lone surrogate)") from None


def _check_type(value: object, kind: type, what: str) -> None:
    if not isinstance(value, kind):
        raise TypeError(f"{what} must be a {kind.__name__}, got {type(value).__name__}")


def _is_str_list(value: object) -> bool:
    if not isinstance(value, list):
        return False
    items = cast("list[object]", value)  # isinstance leaves the items unknown
    return all(isinstance(d, str) for d in items)


def _is_config_values(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    entries = cast("dict[object, object]", value)  # isinstance leaves the entries unknown
    return all(isinstance(k, str) and isinstance(v, (str, bool)) for k, v in entries.items())


def check_principal(principal: object) -> str:
    """A principal handed to :meth:`~acpwire.store.OwnerLedger.claim_owner`, checked."""
    _check_text(principal, "principal")
    assert isinstance(principal, str)
    if not principal:
        raise ValueError("principal must not be empty")
    return principal


def encode(record: SessionRecord) -> Row:
    """Check a record (it comes from agent code, whatever its annotations say) and encode it."""
    _check_type(record, SessionRecord, "a record")
    _check_text(record.session_id, "session_id")
    if not record.session_id:
        raise ValueError("session_id must not be empty")
    _check_text(record.cwd, "cwd")
    _check_text(record.title, "title", optional=True)
    _check_text(record.mode_id, "mode_id", optional=True)
    _check_text(record.owner, "owner", optional=True)
    if not _is_str_list(record.additional_directories):
        raise TypeError("additional_directories must be a list of strings")
    if not _is_config_values(record.config_values):
        raise TypeError("config_values must map config ids (str) to str or bool values")
    _check_type(record.meta, dict, "meta")
    created_key = timestamp_key(record.created_at, "created_at")
    updated_key = (
        created_key
        if record.updated_at == record.created_at
        else timestamp_key(record.updated_at, "updated_at")
    )
    return Row(
        session_id=record.session_id,
        cwd=record.cwd,
        additional_directories=_dumps(record.additional_directories),
        title=record.title,
        created_at=record.created_at,
        updated_at=record.updated_at,
        updated_key=updated_key,
        mode_id=record.mode_id,
        config_values=_dumps(record.config_values),
        meta=_dumps_field(record.meta, "meta"),
        owner=record.owner,
    )


def _loads(text: str) -> Any:
    if text == "{}":
        return {}
    if text == "[]":
        return []
    try:
        return _msgspec_decode(text)
    except msgspec.DecodeError:  # lone surrogates kept as \u escapes, or what older files hold
        import json

        return json.loads(text)


def decode(row: Row | Sequence[Any]) -> SessionRecord:
    """A fresh record from a row (or a backend's row tuple in :data:`COLUMNS` order)."""
    if not isinstance(row, Row):
        row = Row(*row)
    return SessionRecord(
        session_id=row.session_id,
        cwd=row.cwd,
        additional_directories=_loads(row.additional_directories),
        title=row.title,
        created_at=row.created_at,
        updated_at=row.updated_at,
        mode_id=row.mode_id,
        config_values=_loads(row.config_values),
        meta=_loads(row.meta),
        owner=row.owner,
    )


def touched(row: Row, clock: Clock) -> Row:
    """The row with ``updated_at`` set to now."""
    key, stamp = clock.now()
    return Row(*row[:5], stamp, key, *row[7:])  # (Row._replace takes four times as long)


# --------------------------------------------------------------------------- cursors

_CURSOR_VERSION: Final = 1


def _encode_cursor(key: int, session_id: str) -> str:
    import json

    raw = json.dumps([_CURSOR_VERSION, key, session_id], separators=(",", ":")).encode("ascii")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: object) -> tuple[int, str]:
    """``(updated_key, session_id)`` of the last entry of the previous page."""
    shown = repr(cursor) if len(repr(cursor)) <= 80 else repr(cursor)[:77] + "..."
    problem = f"invalid session/list cursor {shown}: pass back a nextCursor value unchanged"
    if not isinstance(cursor, str) or not cursor:
        raise ValueError(problem)
    import json

    try:
        raw = base64.b64decode(cursor + "=" * (-len(cursor) % 4), altchars=b"-_", validate=True)
        value: object = json.loads(raw)
    except ValueError:  # binascii.Error, JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise ValueError(problem) from None
    if not isinstance(value, list):
        raise ValueError(problem)
    items = cast("list[object]", value)  # decoded JSON
    if (
        len(items) != 3
        or items[0] != _CURSOR_VERSION
        or type(items[1]) is not int
        or not isinstance(items[2], str)
    ):
        raise ValueError(problem)
    return items[1], items[2]


def check_limit(limit: object) -> int:
    """``limit`` if it is a positive integer, else ``ValueError``."""
    if type(limit) is not int or limit < 1:
        raise ValueError(f"limit must be a positive integer, got {limit!r}")
    return limit


def list_query(
    table: str,
    *,
    cwd: str | None,
    owner: str | None,
    cursor: str | None,
    limit: int,
    placeholder: Callable[[int], str],
) -> tuple[str, list[object], int]:
    """The SQL of one ``list_sessions`` page (``limit + 1`` rows), its parameters and the limit.

    ``placeholder(n)`` writes the n-th parameter (1-based) in the backend's style.
    Raises ``ValueError`` for a bad cursor or limit, before any query runs.
    """
    limit = check_limit(limit)
    after = None if cursor is None else decode_cursor(cursor)
    where: list[str] = []
    params: list[object] = []

    def param(value: object) -> str:
        params.append(value)
        return placeholder(len(params))

    if cwd is not None:
        where.append(f"cwd = {param(cwd)}")
    if owner is not None:
        where.append(f"owner = {param(owner)}")
    if after is not None:
        key, key_again, sid = param(after[0]), param(after[0]), param(after[1])
        where.append(f"(updated_key < {key} OR (updated_key = {key_again} AND session_id < {sid}))")
    sql = f"SELECT {', '.join(COLUMNS)} FROM {table}"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += f" ORDER BY updated_key DESC, session_id DESC LIMIT {param(limit + 1)}"
    return sql, params, limit


def page(rows: Sequence[Row], limit: int) -> tuple[list[SessionRecord], str | None]:
    """Turn up to ``limit + 1`` rows, in list order, into a page and its next cursor."""
    next_cursor: str | None = None
    if len(rows) > limit:
        rows = rows[:limit]
        last = rows[-1]
        next_cursor = _encode_cursor(last.updated_key, last.session_id)
    return [decode(row) for row in rows], next_cursor
