"""Which parts of the models are unstable ACP, and how to leave them out.

The models are generated from the unstable schema (a superset of the stable one),
so a peer that sends unstable fields is always understood. What acpwire *sends*
is held to the surface the application chose: a connection that did not opt in
to unstable ACP never advertises an unstable capability
(:data:`~acpwire.schema._generated_rules.UNSTABLE_FIELDS` lists the fields).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

import msgspec

from ._base import UNSET, AcpModel, UnsetType
from ._generated_models import ClientCapabilities
from ._generated_rules import UNSTABLE_FIELDS

__all__ = ["UNSTABLE_MARK", "reads_unstable", "without_unstable"]

UNSTABLE_MARK = "acpwire.dev/unstable"
"""The ``clientCapabilities._meta`` key (value ``true``) by which an acpwire client that
opted in to unstable ACP says so in ``initialize``: ACP has no negotiation of its
unstable surface, and acpwire's clients advertise no unstable capability of their own."""

T = TypeVar("T")


def without_unstable(value: T, *, version: int = 1) -> T:
    """``value`` (a model of ACP ``version``: 1, or 2 for the v2 draft) with every field
    that only the unstable schema defines left unset, at any depth. Values without such
    fields come back as they are (same object)."""
    if version == 1:
        return cast("T", _strip(value, UNSTABLE_FIELDS))
    from .v2._generated_rules import UNSTABLE_FIELDS as V2_UNSTABLE_FIELDS

    return cast("T", _strip(value, V2_UNSTABLE_FIELDS))


def reads_unstable(capabilities: ClientCapabilities | UnsetType) -> bool:
    """Whether a client's ``initialize`` capabilities show that it reads unstable ACP: a
    field only the unstable schema defines, or :data:`UNSTABLE_MARK` in their ``_meta``.

    What an agent advertises beyond the stable schema goes only to such a client; any
    other reads the stable schema, which has no room for it."""
    if not isinstance(capabilities, ClientCapabilities):
        return False
    meta = capabilities.meta
    if isinstance(meta, dict) and meta.get(UNSTABLE_MARK) is True:
        return True
    return without_unstable(capabilities) is not capabilities


def _strip(value: object, fields: Mapping[str, frozenset[str]]) -> object:
    if isinstance(value, AcpModel):
        unstable = fields.get(type(value).__name__, frozenset())
        changes: dict[str, Any] = {}
        # The struct's own name tables (msgspec.structs.fields() would resolve the
        # annotations on every call).
        names: tuple[str, ...] = value.__struct_fields__
        wire_names: tuple[str, ...] = value.__struct_encode_fields__
        for name, wire in zip(names, wire_names, strict=True):
            current = getattr(value, name)
            if wire in unstable:
                if current is not UNSET:
                    changes[name] = UNSET
                continue
            stripped = _strip(current, fields)
            if stripped is not current:
                changes[name] = stripped
        return msgspec.structs.replace(value, **changes) if changes else value
    if isinstance(value, list):
        items = cast("list[object]", value)
        stripped_items = [_strip(item, fields) for item in items]
        changed = any(a is not b for a, b in zip(stripped_items, items, strict=True))
        return stripped_items if changed else items
    return value
