"""Which parts of the models are unstable ACP, and how to leave them out.

The models are generated from the unstable schema (a superset of the stable one),
so a peer that sends unstable fields is always understood. What acpwire *sends*
is held to the surface the application chose: a connection that did not opt in
to unstable ACP never advertises an unstable capability
(:data:`~acpwire.schema._generated_rules.UNSTABLE_FIELDS` lists the fields).
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

import msgspec

from ._base import UNSET, AcpModel
from ._generated_rules import UNSTABLE_FIELDS

__all__ = ["without_unstable"]

T = TypeVar("T")


def without_unstable(value: T) -> T:
    """``value`` with every field that only the unstable schema defines left unset,
    at any depth. Values without such fields come back as they are (same object)."""
    return cast("T", _strip(value))


def _strip(value: object) -> object:
    if isinstance(value, AcpModel):
        unstable = UNSTABLE_FIELDS.get(type(value).__name__, frozenset())
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
            stripped = _strip(current)
            if stripped is not current:
                changes[name] = stripped
        return msgspec.structs.replace(value, **changes) if changes else value
    if isinstance(value, list):
        items = cast("list[object]", value)
        stripped_items = [_strip(item) for item in items]
        changed = any(a is not b for a, b in zip(stripped_items, items, strict=True))
        return stripped_items if changed else items
    return value
