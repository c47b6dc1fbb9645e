"""The ACP method table: the one place that says which method goes where.

Routing, the typed peers, the handler base classes, the inspector and the
conformance checker all read this table; it is generated from the schema's
``x-method``/``x-side`` annotations by ``tools/gen_schema.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ._generated_methods import METHODS
from ._method_spec import CapabilityGate, MethodSpec

__all__ = [
    "AGENT_METHODS",
    "BY_NAME",
    "CLIENT_METHODS",
    "METHODS",
    "PROTOCOL_METHODS",
    "CapabilityGate",
    "MethodSpec",
    "is_extension",
]

BY_NAME: Mapping[str, MethodSpec] = MappingProxyType({m.name: m for m in METHODS})
"""Every method by wire name."""

AGENT_METHODS: Mapping[str, MethodSpec] = MappingProxyType(
    {m.name: m for m in METHODS if m.handled_by == "agent"}
)
"""Methods an agent handles (the client calls them)."""

CLIENT_METHODS: Mapping[str, MethodSpec] = MappingProxyType(
    {m.name: m for m in METHODS if m.handled_by == "client"}
)
"""Methods a client handles (the agent calls them)."""

PROTOCOL_METHODS: Mapping[str, MethodSpec] = MappingProxyType(
    {m.name: m for m in METHODS if m.handled_by == "both"}
)
"""Protocol-level methods either side may send (``$/cancel_request``)."""


def is_extension(method: str) -> bool:
    """Extension methods are the ones whose name starts with an underscore."""
    return method.startswith("_")
