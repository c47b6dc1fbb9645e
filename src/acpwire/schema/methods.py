"""The ACP method table: the one place that says which method goes where.

Routing, the typed peers, the handler base classes, the inspector and the
conformance checker all read it; it is generated from the schema's
``x-method``/``x-side`` annotations by ``tools/gen_schema.py``, one row per
method, handling side and kind (``mcp/message`` is a request the agent sends
and a notification the client sends), each marked ``stable`` or ``unstable``.

A connection speaks one :class:`MethodTable`: :data:`V1` (stable ACP v1, the
default), :data:`V1_UNSTABLE` (stable plus the unstable methods, for
applications that opt in) or, once ``initialize`` chose it, :data:`V2` (the v2
draft, opt-in; see ``docs/protocol-currency.md``). The module-level views
(:data:`METHODS`, :data:`BY_NAME`, ...) are those of :data:`V1`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from ._generated_methods import V1_METHODS
from ._method_spec import CapabilityGate, HandledBy, MethodSpec

__all__ = [
    "AGENT_METHODS",
    "BY_NAME",
    "CLIENT_METHODS",
    "METHODS",
    "PROTOCOL_METHODS",
    "V1",
    "V1_METHODS",
    "V1_UNSTABLE",
    "V2",
    "V2_ALL",
    "V2_METHODS",
    "CapabilityGate",
    "MethodSpec",
    "MethodTable",
    "is_extension",
    "v1_table",
]


class MethodTable:
    """The methods one connection routes and may send: a protocol version and its
    stability level.

    Rows are keyed by (wire name, handling side, request or notification);
    :meth:`find` looks one up from what is on the wire instead (a name and whether
    the message has an id).
    """

    def __init__(self, version: int, unstable: bool, methods: Iterable[MethodSpec]) -> None:
        self.version = version
        self.unstable = unstable
        self.methods: tuple[MethodSpec, ...] = tuple(
            m for m in methods if unstable or m.stability == "stable"
        )
        self._by_side = {(m.name, m.handled_by, m.is_request): m for m in self.methods}
        self._by_shape = {(m.name, m.is_request): m for m in self.methods}

    def __repr__(self) -> str:
        level = "unstable" if self.unstable else "stable"
        return f"<MethodTable v{self.version} {level}: {len(self.methods)} methods>"

    def handled_by(self, side: HandledBy) -> tuple[MethodSpec, ...]:
        """The rows that ``side`` serves."""
        return tuple(m for m in self.methods if m.handled_by == side)

    def get(
        self, method: str, handled_by: HandledBy, *, request: bool | None = None
    ) -> MethodSpec | None:
        """The row of ``method`` as ``handled_by`` serves it, if this table has one.

        ``request`` picks the request or the notification row where a side serves
        both (``proxy/successor``); by default the request row is preferred.
        """
        if request is not None:
            return self._by_side.get((method, handled_by, request))
        return self._by_side.get((method, handled_by, True)) or self._by_side.get(
            (method, handled_by, False)
        )

    def find(self, method: str, *, request: bool) -> MethodSpec | None:
        """The row a message on the wire belongs to: its method, and whether it has an id.

        Both directions of a method share their params and result types, so the
        shape alone picks the definitions to check a message against.
        """
        return self._by_shape.get((method, request))


V1 = MethodTable(1, False, V1_METHODS)
"""Stable ACP v1: what every connection speaks unless the application opts in."""

V1_UNSTABLE = MethodTable(1, True, V1_METHODS)
"""ACP v1 with its unstable methods (``session/fork``, ``providers/*``, ``mcp/message``,
...): for applications that opt in. They may change in any release of the protocol."""


if TYPE_CHECKING:
    V2_METHODS: tuple[MethodSpec, ...]
    V2: MethodTable
    """The ACP v2 draft's stable methods: what a connection routes once ``initialize``
    chose version 2 (opt-in; the draft may change in any release of the schema)."""
    V2_ALL: MethodTable
    """Every v2 draft method, unstable ones included: what a v2 message is checked
    against (acpwire routes only :data:`V2`)."""


def __getattr__(name: str) -> object:
    # The v2 tables (and the v2 models they name) load on first use: a v1 application
    # never pays for them at start-up.
    if name in ("V2", "V2_ALL", "V2_METHODS"):
        from .v2._generated_methods import V2_METHODS

        globals().update(
            V2_METHODS=V2_METHODS,
            V2=MethodTable(2, False, V2_METHODS),
            V2_ALL=MethodTable(2, True, V2_METHODS),
        )
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def v1_table(unstable: bool) -> MethodTable:
    """:data:`V1_UNSTABLE` if ``unstable``, else :data:`V1`."""
    return V1_UNSTABLE if unstable else V1


METHODS: tuple[MethodSpec, ...] = V1.methods
"""Every stable v1 method."""

BY_NAME: Mapping[str, MethodSpec] = MappingProxyType({m.name: m for m in METHODS})
"""Every stable v1 method by wire name (each is served by one side only)."""

AGENT_METHODS: Mapping[str, MethodSpec] = MappingProxyType(
    {m.name: m for m in V1.handled_by("agent")}
)
"""Stable methods an agent handles (the client calls them)."""

CLIENT_METHODS: Mapping[str, MethodSpec] = MappingProxyType(
    {m.name: m for m in V1.handled_by("client")}
)
"""Stable methods a client handles (the agent calls them)."""

PROTOCOL_METHODS: Mapping[str, MethodSpec] = MappingProxyType(
    {m.name: m for m in V1.handled_by("both")}
)
"""Protocol-level methods either side may send (``$/cancel_request``)."""


def is_extension(method: str) -> bool:
    """Extension methods are the ones whose name starts with an underscore."""
    return method.startswith("_")
