"""Checking an elicitation form answer against its requested schema (sans-IO).

Shared by both roles: the client checks what the user typed before answering,
the agent checks what came back before trusting it.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping
from typing import Any, cast

from .. import schema as s
from ..schema import UnsetType, unset_to_none

__all__ = ["validate_form"]


def validate_form(schema: s.ElicitationSchema, content: Mapping[str, Any]) -> list[str]:
    """Problems with ``content`` as an answer to ``schema``; empty when it conforms.

    Checks required fields, value types, string length/pattern/format/enum, number
    ranges and multi-select items. Properties of a type this version does not know are
    not checked (and not rendered as a known type, ELIC-030).
    """
    props = {} if isinstance(schema.properties, UnsetType) else schema.properties
    required = (
        [] if schema.required is None or isinstance(schema.required, UnsetType) else schema.required
    )
    problems = [f"{name}: required" for name in required if name not in content]
    for name, value in content.items():
        prop = props.get(name)
        if prop is None:
            problems.append(f"{name}: not a field of this form")
            continue
        problem = _check_value(prop, value)
        if problem:
            problems.append(f"{name}: {problem}")
    return problems


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_value(prop: s.ElicitationPropertySchema, value: Any) -> str | None:
    if isinstance(prop, s.StringPropertySchema):
        return _check_string(prop, value)
    if isinstance(prop, (s.NumberPropertySchema, s.IntegerPropertySchema)):
        if isinstance(prop, s.IntegerPropertySchema):
            if not (isinstance(value, int) and not isinstance(value, bool)):
                return "must be an integer"
        elif not _is_number(value):
            return "must be a number"
        low, high = unset_to_none(prop.minimum), unset_to_none(prop.maximum)
        if low is not None and value < low:
            return f"must be at least {low}"
        if high is not None and value > high:
            return f"must be at most {high}"
        return None
    if isinstance(prop, s.BooleanPropertySchema):
        return None if isinstance(value, bool) else "must be true or false"
    if isinstance(prop, s.MultiSelectPropertySchema):
        if not isinstance(value, list):
            return "must be a list of strings"
        chosen = cast("list[object]", value)  # a JSON array
        if not all(isinstance(v, str) for v in chosen):
            return "must be a list of strings"
        items = prop.items
        allowed: list[str] | None = None
        if isinstance(items, s.StringMultiSelectItems):
            allowed = list(items.enum)
        elif isinstance(items, s.TitledMultiSelectItems):
            allowed = [o.const for o in items.any_of]
        if allowed is not None and any(v not in allowed for v in chosen):
            return f"each item must be one of {allowed}"
        low, high = unset_to_none(prop.min_items), unset_to_none(prop.max_items)
        if low is not None and len(chosen) < low:
            return f"choose at least {low}"
        if high is not None and len(chosen) > high:
            return f"choose at most {high}"
        return None
    return None


def _check_string(prop: s.StringPropertySchema, value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be text"
    low, high = unset_to_none(prop.min_length), unset_to_none(prop.max_length)
    if low is not None and len(value) < low:
        return f"must be at least {low} characters"
    if high is not None and len(value) > high:
        return f"must be at most {high} characters"
    allowed = unset_to_none(prop.enum)
    one_of = unset_to_none(prop.one_of)
    if one_of is not None:
        allowed = [o.const for o in one_of]
    if allowed is not None and value not in allowed:
        return f"must be one of {allowed}"
    pattern = unset_to_none(prop.pattern)
    if pattern is not None:
        try:
            if re.search(pattern, value) is None:
                return f"must match {pattern}"
        except re.error:
            pass  # a pattern Python cannot compile is not the user's fault
    fmt = unset_to_none(prop.format)
    if fmt == "email" and not re.fullmatch(r"[^@\s]+@[^@\s]+", value):
        return "must be an email address"
    if fmt == "uri" and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", value):
        return "must be a URI"
    if fmt in ("date", "date-time"):
        try:
            if fmt == "date":
                _dt.date.fromisoformat(value)
            else:
                _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return f"must be a {fmt}"
    return None
