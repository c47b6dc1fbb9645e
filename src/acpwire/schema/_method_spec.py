"""The shape of one row of the method table (hand-written; rows are generated)."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

HandledBy = Literal["agent", "client", "both"]
"""Which role serves a method (``both``: protocol-level, ``$/cancel_request``)."""


class CapabilityGate(NamedTuple):
    """What must have been advertised before a method may be called.

    ``advertised_by`` is the role whose capabilities hold the flag (usually the
    side that handles the method; for a few unstable methods the sender's own),
    ``path`` the dotted wire path inside them, and ``kind`` how to read it:
    ``bool`` (true means supported), ``marker`` (a present, non-null object means
    supported) or ``mode`` (elicitation: the sub-object named after the request's
    mode).
    """

    advertised_by: Literal["agent", "client"]
    path: str
    kind: Literal["bool", "marker", "mode"]


class MethodSpec(NamedTuple):
    """One ACP method: who handles it, its kind, its types and its gate."""

    name: str
    handled_by: HandledBy
    kind: Literal["request", "notification"]
    python_name: str
    params: Any
    result: Any
    gate: CapabilityGate | None
    stability: Literal["stable", "unstable"]
    params_def: str
    """Name of the params definition in the JSON Schema (``$defs``)."""
    result_def: str | None
    """Name of the result definition, for requests."""

    @property
    def is_request(self) -> bool:
        return self.kind == "request"
