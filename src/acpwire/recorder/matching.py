"""Tolerant matching: what may differ between a recording and a live run, and the
differences that remain (docs/recorder.md, "Matching").

Two runs of the same conversation differ where nothing is wrong: request ids, ids the
other side made up (session, tool call, terminal, message ids), the workspace's absolute
path, time stamps and trace context. :class:`Bindings` learns, from pairs of messages
known to correspond, which recorded value stands for which live one (a string under a
key ending in ``Id``, and the ``cwd`` of session requests, whose value then stands as a
path prefix); :func:`normalise` turns a live value into the recorded run's terms and
drops what never compares (``_meta``, ISO 8601 times). :func:`differences` lists what is
left, each with a JSON path (``params.update.content.text``).

Bindings are learned first come, first bound: once ``live-7`` stands for ``rec-3``, a
later ``live-7`` where ``rec-4`` was recorded is a difference.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from .redaction import file_placeholder

__all__ = ["Bindings", "Difference", "differences", "normalise", "similarity"]

_TIME = re.compile(r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?$")
TIME_PLACEHOLDER = "<time>"
MIN_BOUND = 4
"""Shortest id replaced inside longer strings (a session id quoted in a message's text);
shorter ids are bound only where they stand alone."""
_VOLATILE_KEYS = frozenset({"_meta"})
FILE_MARK = "[REDACTED file: "


def _is_id_key(key: str) -> bool:
    return key.endswith("Id") or key == "id"


@dataclass
class Bindings:
    """Which recorded value stands for which live one (see the module docstring)."""

    live_to_recorded: dict[str, str] = field(default_factory=dict[str, str])
    recorded_to_live: dict[str, str] = field(default_factory=dict[str, str])
    paths: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    """(recorded prefix, live prefix) of workspace paths, longest first."""
    conflicts: list[str] = field(default_factory=list[str])

    def bind(self, recorded: str, live: str) -> bool:
        """Bind ``live`` to ``recorded``; False if either is bound to something else."""
        if self.live_to_recorded.get(live, recorded) != recorded:
            return False
        if self.recorded_to_live.get(recorded, live) != live:
            return False
        self.live_to_recorded[live] = recorded
        self.recorded_to_live[recorded] = live
        return True

    def bind_path(self, recorded: str, live: str) -> None:
        recorded, live = recorded.rstrip("/") or "/", live.rstrip("/") or "/"
        if recorded == live or recorded == "/" or live == "/":
            return
        if (recorded, live) not in self.paths:
            self.paths.append((recorded, live))
            self.paths.sort(key=lambda p: -len(p[0]))

    def learn(self, recorded: Any, live: Any, key: str = "") -> None:
        """Walk two values known to correspond and bind their ids and paths."""
        if isinstance(recorded, dict) and isinstance(live, dict):
            rec = cast("dict[str, Any]", recorded)
            liv = cast("dict[str, Any]", live)
            for k in rec.keys() & liv.keys():
                if k not in _VOLATILE_KEYS:
                    self.learn(rec[k], liv[k], k)
        elif isinstance(recorded, list) and isinstance(live, list):
            for r, v in zip(recorded, live, strict=False):
                self.learn(r, v, key)
        elif isinstance(recorded, str) and isinstance(live, str) and recorded != live:
            if key == "cwd" or key == "additionalDirectories":
                self.bind_path(recorded, live)
            elif _is_id_key(key) and not self.bind(recorded, live):
                self.conflicts.append(f"{key}: {live!r} for {recorded!r}")

    # -- applying -----------------------------------------------------------------

    def to_live(self, value: Any) -> Any:
        """A recorded value in the live run's terms (what a replay sends)."""
        return _substitute(value, self.recorded_to_live, [(r, v) for r, v in self.paths])

    def to_recorded(self, value: Any) -> Any:
        """A live value in the recorded run's terms (what a replay compares)."""
        return _substitute(value, self.live_to_recorded, [(v, r) for r, v in self.paths])


def _substitute(value: Any, ids: dict[str, str], paths: list[tuple[str, str]]) -> Any:
    if isinstance(value, str):
        return _substitute_text(value, ids, paths)
    if isinstance(value, dict):
        return {k: _substitute(v, ids, paths) for k, v in cast("dict[str, Any]", value).items()}
    if isinstance(value, list):
        return [_substitute(v, ids, paths) for v in value]
    return value


def _substitute_text(text: str, ids: dict[str, str], paths: list[tuple[str, str]]) -> str:
    if text in ids:
        return ids[text]
    for old, new in paths:
        if old in text:
            # A path prefix: at the start of the text, or after a space, quote or colon.
            text = re.sub(
                rf"(?<![\w.-]){re.escape(old)}(?=/|\b|$)", new.replace("\\", "\\\\"), text
            )
    for old, new in ids.items():
        if len(old) >= MIN_BOUND and old in text:
            text = text.replace(old, new)
    return text


def normalise(value: Any) -> Any:
    """``value`` without what never compares: ``_meta`` and ISO 8601 time stamps."""
    if isinstance(value, dict):
        return {
            k: normalise(v)
            for k, v in cast("dict[str, Any]", value).items()
            if k not in _VOLATILE_KEYS
        }
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, str) and _TIME.match(value):
        return TIME_PLACEHOLDER
    return value


@dataclass(frozen=True)
class Difference:
    """One place where a live value differs from the recorded one."""

    path: str
    recorded: Any
    live: Any
    kind: str = "changed"
    """``changed``, ``missing`` (recorded, not live) or ``added`` (live only)."""


_MISSING = object()


def differences(recorded: Any, live: Any, path: str = "") -> list[Difference]:
    """Every leaf where two (normalised) values differ, with its JSON path."""
    return list(_walk(recorded, live, path))


def _walk(recorded: Any, live: Any, path: str) -> Iterator[Difference]:
    if isinstance(recorded, dict) and isinstance(live, dict):
        rec = cast("dict[str, Any]", recorded)
        liv = cast("dict[str, Any]", live)
        for key in [*rec, *(k for k in liv if k not in rec)]:
            sub = f"{path}.{key}" if path else key
            if key not in liv:
                yield Difference(sub, rec[key], None, "missing")
            elif key not in rec:
                yield Difference(sub, None, liv[key], "added")
            else:
                yield from _walk(rec[key], liv[key], sub)
    elif isinstance(recorded, list) and isinstance(live, list):
        rec_l = recorded
        liv_l = live
        for i in range(max(len(rec_l), len(liv_l))):
            sub = f"{path}[{i}]"
            if i >= len(liv_l):
                yield Difference(sub, rec_l[i], None, "missing")
            elif i >= len(rec_l):
                yield Difference(sub, None, liv_l[i], "added")
            else:
                yield from _walk(rec_l[i], liv_l[i], sub)
    elif isinstance(recorded, str) and recorded.startswith(FILE_MARK) and isinstance(live, str):
        # File text recorded under --redact-files: compared by size and hash.
        if file_placeholder(live) != recorded:
            yield Difference(path, recorded, file_placeholder(live))
    elif recorded != live or type(recorded) is not type(live):
        yield Difference(path, recorded, live)


def similarity(recorded: Any, live: Any) -> float:
    """How alike two values are, 0 to 1 (1: equal): the share of leaves that agree."""
    total = _leaves(recorded) + _leaves(live)
    if total == 0:
        return 1.0
    diff = sum(
        2 if d.kind == "changed" else _leaves(d.recorded if d.kind == "missing" else d.live)
        for d in differences(recorded, live)
    )
    return max(0.0, 1.0 - diff / total)


def _leaves(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaves(v) for v in cast("dict[str, Any]", value).values()) or 1
    if isinstance(value, list):
        items: list[Any] = value
        return sum(_leaves(v) for v in items) or 1
    return 1
