"""W3C Trace Context in ACP ``_meta``: reading it from a message, adding it to one.

The spec reserves three root keys of ``_meta`` for W3C Trace Context
(docs/protocol/v1/extensibility.mdx), so that traces cross ACP the way they
cross MCP and HTTP: ``traceparent``, ``tracestate`` and ``baggage``. acpwire
carries them from an incoming request to every message sent while handling it
(:mod:`acpwire.engine.trace` keeps the current one in a context variable).

What is accepted follows the W3C rules a forwarder needs: a ``traceparent``
must be ``version-traceid-parentid-flags`` in lower-case hex, with neither id
all zeros and version ``ff`` refused; without a valid one ``tracestate`` and
``baggage`` are dropped too. Sizes are bounded, because every message of the
chain repeats them: ``tracestate`` over 512 characters and ``baggage`` over
8192 are dropped (W3C lets a forwarder drop what it cannot carry whole).
Sans-IO: nothing here awaits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, cast

import msgspec

from ..schema import UNSET

__all__ = ["MAX_BAGGAGE", "MAX_TRACESTATE", "TRACE_KEYS", "TraceContext", "with_trace"]

TRACE_KEYS: Final = ("traceparent", "tracestate", "baggage")
"""The root ``_meta`` keys the spec reserves for W3C Trace Context."""

MAX_TRACESTATE: Final = 512
"""W3C: a forwarder must carry at least 512 characters of ``tracestate``; acpwire carries
no more than that."""

MAX_BAGGAGE: Final = 8192
"""W3C Baggage: at least 8192 bytes must be propagated; acpwire carries no more."""

_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_ZERO_TRACE, _ZERO_SPAN = "0" * 32, "0" * 16


@dataclass(frozen=True, slots=True)
class TraceContext:
    """One request chain's W3C trace context, as carried in ``_meta``."""

    traceparent: str
    tracestate: str | None = None
    baggage: str | None = None

    def __post_init__(self) -> None:
        if not _valid_traceparent(self.traceparent):
            raise ValueError(f"not a W3C traceparent: {self.traceparent[:80]!r}")

    @property
    def trace_id(self) -> str:
        return self.traceparent[3:35]

    @property
    def parent_id(self) -> str:
        return self.traceparent[36:52]

    @property
    def sampled(self) -> bool:
        return int(self.traceparent[53:55], 16) & 1 == 1

    def meta(self) -> dict[str, str]:
        """The ``_meta`` keys this context sets."""
        keys = {"traceparent": self.traceparent}
        if self.tracestate is not None:
            keys["tracestate"] = self.tracestate
        if self.baggage is not None:
            keys["baggage"] = self.baggage
        return keys

    @classmethod
    def from_meta(cls, meta: object) -> TraceContext | None:
        """The context a message's ``_meta`` carries, or None (absent or not valid)."""
        if not isinstance(meta, dict):
            return None
        fields = cast("dict[str, object]", meta)
        parent = fields.get("traceparent")
        if not isinstance(parent, str) or not _valid_traceparent(parent):
            return None
        state, baggage = fields.get("tracestate"), fields.get("baggage")
        return cls(
            parent,
            state if isinstance(state, str) and len(state) <= MAX_TRACESTATE else None,
            baggage if isinstance(baggage, str) and len(baggage) <= MAX_BAGGAGE else None,
        )


def _valid_traceparent(value: str) -> bool:
    # Later versions may append fields ("-..."), which a version-00 reader ignores.
    match = _TRACEPARENT.match(value)
    if match is None or (len(value) != 55 and (match[1] == "00" or value[55:56] != "-")):
        return False
    return match[1] != "ff" and match[2] != _ZERO_TRACE and match[3] != _ZERO_SPAN


def with_trace(params: Any, trace: TraceContext) -> Any:
    """``params`` with ``trace`` in its ``_meta``, as a copy (``params`` is not changed).

    A ``_meta`` that already has a ``traceparent`` is left alone: the code that
    put it there started its own span. Params that cannot carry ``_meta``
    (models without it, raw JSON) come back as they are.
    """
    if params is None:
        return {"_meta": trace.meta()}
    if isinstance(params, dict):
        fields = cast("dict[str, Any]", params)
        meta = _merged(fields.get("_meta"), trace)
        return fields if meta is None else {**fields, "_meta": meta}
    if isinstance(params, msgspec.Struct) and "meta" in params.__struct_fields__:
        meta = _merged(getattr(params, "meta"), trace)  # noqa: B009 - a field of some models only
        return params if meta is None else msgspec.structs.replace(params, meta=meta)
    return params


def _merged(meta: object, trace: TraceContext) -> dict[str, Any] | None:
    """The ``_meta`` object with the trace keys, or None to keep the one there."""
    if meta is None or meta is UNSET:
        return trace.meta()
    if not isinstance(meta, dict):
        return None
    fields = cast("dict[str, Any]", meta)
    if "traceparent" in fields:
        return None
    return {**fields, **trace.meta()}
