"""Strict validation of ACP messages with nothing but what acpwire carries (no npm, no jsonschema).

acpwire's models are tolerant on purpose: unknown fields are ignored, any string passes for
an enumeration and unknown union members are kept, so that a newer peer never breaks a
reader. A conformance checker needs the opposite, so :class:`StrictValidator` walks the
decoded JSON against the same generated models and reports every departure from the
schema's letter:

* ``unknown-field``: a key the type does not define. The official JSON Schema leaves its
  objects open, but the spec closes them (EXT-002: custom data goes in ``_meta``), so every
  model is closed here; ``_meta`` and free-form values (``rawInput``, extension payloads)
  stay open.
* ``missing-field``, ``type``: a required field absent, a value of the wrong JSON type
  (``true`` is not an integer, ``1`` is not a string).
* ``enum``: a string outside a closed enumeration (the rules' ``field_enums``).
* ``unknown-member``: a union member the schema does not list, where the schema admits no
  others (the rules' ``open_unions`` name the unions that do). A string tag the schema
  does not know may come from a newer schema (:attr:`Problem.newer`): ``acp check``
  notes it instead of failing.
* ``method``: a method name that is neither in the method table (stable or unstable)
  nor an extension (``_``).

Only payloads are judged (params, results); the JSON-RPC envelope is the caller's business.
Unstable fields and members are accepted: they are in the official (unstable) schema.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

import msgspec.inspect as mi

from ..schema import _generated_rules as v1_rules
from ..schema._base import union_layout
from ..schema.methods import V1_UNSTABLE, MethodTable

__all__ = ["V1_RULES", "Problem", "ProblemKind", "Rules", "StrictValidator", "validate_value"]

ProblemKind = Literal["unknown-field", "missing-field", "type", "enum", "unknown-member", "method"]


@dataclass(frozen=True, slots=True)
class Rules:
    """What one version's schema says beyond its models' types (its generated rules
    module): closed enumerations, one-of requirements and the unions open to others."""

    enum_values: Mapping[str, frozenset[str]]
    field_enums: Mapping[tuple[str, str], str]
    required_one_of: Mapping[str, tuple[frozenset[str], ...]]
    open_unions: frozenset[str]

    @classmethod
    def of(cls, module: Any) -> Rules:
        """The rules of a generated ``_generated_rules`` module."""
        return cls(
            module.ENUM_VALUES, module.FIELD_ENUMS, module.REQUIRED_ONE_OF, module.OPEN_UNIONS
        )


V1_RULES = Rules.of(v1_rules)
"""ACP v1's rules (its unstable parts included)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One departure from the schema: what kind, where (a JSON path from ``$``) and what."""

    kind: ProblemKind
    path: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}: {self.text}"

    @property
    def newer(self) -> bool:
        """A union member told by a string tag the schema does not list: what a newer
        schema may have added (the unions grow: auth method types, update kinds, content
        kinds), so a checker reports it as newer than itself rather than as wrong."""
        return self.kind == "unknown-member"


_INFO: dict[Any, mi.Type] = {}


def _info(tp: Any) -> mi.Type:
    info = _INFO.get(tp)
    if info is None:
        info = _INFO[tp] = mi.type_info(tp)
    return info


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def _accepts(t: mi.Type, value: object) -> bool:
    """Whether ``value``'s JSON kind can be a ``t`` at all (picks union candidates)."""
    if isinstance(t, mi.AnyType):
        return True
    if value is None:
        return isinstance(t, mi.NoneType)
    if isinstance(value, bool):
        return isinstance(t, mi.BoolType)
    if isinstance(value, int):
        return isinstance(t, (mi.IntType, mi.FloatType))
    if isinstance(value, float):
        return isinstance(t, mi.FloatType)
    if isinstance(value, str):
        return isinstance(t, (mi.StrType, mi.LiteralType))
    if isinstance(value, list):
        return isinstance(t, (mi.ListType, mi.CustomType))
    if isinstance(value, dict):
        return isinstance(t, (mi.StructType, mi.DictType, mi.CustomType))
    return False


def _describe(t: mi.Type) -> str:
    names: dict[type[mi.Type], str] = {
        mi.StrType: "string",
        mi.IntType: "integer",
        mi.FloatType: "number",
        mi.BoolType: "boolean",
        mi.NoneType: "null",
        mi.ListType: "array",
        mi.DictType: "object",
        mi.StructType: "object",
        mi.CustomType: "object",
    }
    return names.get(type(t), type(t).__name__)


def _field_enum(cls: type[Any], wire: str, rules: Rules) -> str | None:
    for klass in cls.__mro__:
        enum = rules.field_enums.get((klass.__name__, wire))
        if enum is not None:
            return enum
    return None


class _Walker:
    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.problems: list[Problem] = []

    def add(self, kind: ProblemKind, path: str, text: str) -> None:
        self.problems.append(Problem(kind, path, text))

    def walk(self, value: Any, t: mi.Type, path: str, enum: str | None = None) -> None:
        if isinstance(t, mi.AnyType):
            return
        if isinstance(t, mi.UnionType):
            self.union(value, t, path, enum)
        elif isinstance(t, mi.StructType):
            self.struct(value, t, path)
        elif isinstance(t, mi.CustomType):
            self.marker(value, t.cls, path)
        elif isinstance(t, mi.ListType):
            if not isinstance(value, list):
                self.add("type", path, f"expected an array, got {_kind(value)}")
                return
            items = cast("list[object]", value)
            for n, item in enumerate(items):
                self.walk(item, t.item_type, f"{path}[{n}]", enum)
        elif isinstance(t, mi.DictType):
            if not isinstance(value, dict):
                self.add("type", path, f"expected an object, got {_kind(value)}")
                return
            for key, item in cast("dict[str, Any]", value).items():
                self.walk(item, t.value_type, f"{path}.{key}")
        elif isinstance(t, mi.LiteralType):
            if value not in t.values:
                self.add("enum", path, f"{value!r} is not one of {sorted(map(str, t.values))}")
        elif not _accepts(t, value):
            self.add("type", path, f"expected {_describe(t)}, got {_kind(value)}")
        elif (
            enum is not None
            and isinstance(value, str)
            and value not in self.rules.enum_values[enum]
        ):
            allowed = ", ".join(sorted(self.rules.enum_values[enum]))
            self.add("enum", path, f"{value!r} is not a {enum} ({allowed})")

    def struct(self, value: Any, t: mi.StructType, path: str) -> None:
        if not isinstance(value, dict):
            self.add("type", path, f"expected an object ({t.cls.__name__}), got {_kind(value)}")
            return
        data = cast("dict[str, Any]", value)
        fields = {f.encode_name: f for f in t.fields}
        for key, item in data.items():
            if t.tag_field is not None and key == t.tag_field:
                if item != t.tag:
                    self.add("type", f"{path}.{key}", f"expected {t.tag!r}, got {item!r}")
                continue
            f = fields.get(key)
            if f is None:
                self.add("unknown-field", f"{path}.{key}", f"{t.cls.__name__} has no field {key!r}")
                continue
            self.walk(item, f.type, f"{path}.{key}", _field_enum(t.cls, key, self.rules))
        for f in t.fields:
            if f.required and f.encode_name not in data:
                self.add(
                    "missing-field",
                    f"{path}.{f.encode_name}",
                    f"missing (required in {t.cls.__name__})",
                )
        one_of = self.rules.required_one_of
        alternatives = next(
            (one_of[k.__name__] for k in t.cls.__mro__ if k.__name__ in one_of),
            (),
        )
        if alternatives and not any(a <= data.keys() for a in alternatives):
            wanted = " or ".join(", ".join(sorted(a)) for a in alternatives)
            self.add("missing-field", path, f"{t.cls.__name__} needs {wanted}")

    def best(self, value: Any, choices: list[mi.Type], path: str, enum: str | None) -> None:
        """Walk ``value`` as each choice; keep the problems of the closest one."""
        found: list[Problem] | None = None
        for choice in choices:
            trial = _Walker(self.rules)
            trial.walk(value, choice, path, enum)
            if not trial.problems:
                return
            if found is None or len(trial.problems) < len(found):
                found = trial.problems
        self.problems += found or []

    def union(self, value: Any, t: mi.UnionType, path: str, enum: str | None) -> None:
        candidates = [m for m in t.types if _accepts(m, value)]
        if not candidates:
            wanted = " or ".join(dict.fromkeys(_describe(m) for m in t.types))
            self.add("type", path, f"expected {wanted}, got {_kind(value)}")
            return
        structs = [m for m in candidates if isinstance(m, mi.StructType)]
        if isinstance(value, dict) and len(structs) > 1 and all(s.tag_field for s in structs):
            data = cast("dict[str, Any]", value)
            field = structs[0].tag_field or ""
            tag = data.get(field)
            for s in structs:
                if s.tag == tag:
                    self.struct(value, s, path)
                    return
            layout = union_layout(frozenset(s.cls for s in structs))
            self.unknown_member(layout.unknown if layout else None, f"{path}.{field}", tag)
            return
        self.best(value, candidates, path, enum)

    def marker(self, value: Any, marker: type[Any], path: str) -> None:
        layout = union_layout(marker)
        if layout is None:
            return  # not a union acpwire knows the layout of: nothing to hold it to
        if layout.field is not None:
            if not isinstance(value, dict):
                self.add("type", path, f"expected an object, got {_kind(value)}")
                return
            tag = cast("dict[str, Any]", value).get(layout.field)
            member = layout.tags.get(tag) if isinstance(tag, str) else None
            if member is None and tag is None:
                member = layout.default
            if member is None:
                self.unknown_member(layout.unknown, f"{path}.{layout.field}", tag)
                return
            self.walk(value, _info(member), path)
            return
        choices = [_info(c) for c in layout.choices]
        fitting = [c for c in choices if _accepts(c, value)]
        open_union = (
            layout.unknown is not None and layout.unknown.__name__ in self.rules.open_unions
        )
        if not fitting:
            if not (open_union and isinstance(value, dict)):
                self.add("type", path, f"no member of the union takes a {_kind(value)}")
            return
        if open_union:
            trial = _Walker(self.rules)
            trial.best(value, fitting, path, None)
            if trial.problems:
                return  # a member the schema does not list, which it allows here
        self.best(value, fitting, path, None)

    def unknown_member(self, unknown: type[Any] | None, path: str, tag: object) -> None:
        if not isinstance(tag, str):
            kind: ProblemKind = "type" if tag is not None else "missing-field"
            self.add(kind, path, f"no member of the union is told by {tag!r}")
        elif unknown is None or unknown.__name__ not in self.rules.open_unions:
            self.add("unknown-member", path, f"{tag!r} is not a member the schema lists")


def validate_value(
    value: Any, tp: Any, path: str = "$", *, rules: Rules = V1_RULES
) -> list[Problem]:
    """Every problem of the decoded JSON ``value`` as a ``tp`` (a model class or type of
    the version ``rules`` belong to)."""
    walker = _Walker(rules)
    walker.walk(value, _info(tp), path)
    return walker.problems


class StrictValidator:
    """Validates the payloads of one side's messages; remembers requests to type their results.

    Feed it the other side's requests with :meth:`note_request` (so a result can be checked
    against the method it answers) and this side's messages with :meth:`validate`.
    """

    def __init__(self, table: MethodTable = V1_UNSTABLE, rules: Rules = V1_RULES) -> None:
        self.table = table
        self.rules = rules
        self._methods: dict[Hashable, str] = {}

    @classmethod
    def for_v2(cls) -> StrictValidator:
        """A validator of the v2 draft's messages (its unstable parts included)."""
        from ..schema.methods import V2_ALL
        from ..schema.v2 import _generated_rules as v2_rules

        return cls(V2_ALL, Rules.of(v2_rules))

    @staticmethod
    def _key(request_id: object) -> Hashable:
        return (type(request_id).__name__, request_id if isinstance(request_id, Hashable) else None)

    def note_request(self, message: Any) -> None:
        if isinstance(message, dict):
            m = cast("dict[str, Any]", message)
            if isinstance(m.get("method"), str) and "id" in m:
                self._methods[self._key(m["id"])] = m["method"]

    def method_of(self, response: dict[str, Any]) -> str | None:
        """The method a response answers (as noted), or None."""
        return self._methods.get(self._key(response.get("id")))

    def validate(self, message: Any) -> list[Problem]:
        """Problems in the params of a request or notification, or in a result."""
        if not isinstance(message, dict):
            return []
        m = cast("dict[str, Any]", message)
        method = m.get("method")
        if isinstance(method, str):
            spec = self.table.find(method, request="id" in m)
            if spec is None:
                if method.startswith(("_", "$/")):
                    return []
                return [Problem("method", "$.method", f"{method!r} is not an ACP method")]
            return validate_value(m.get("params"), spec.params, "$.params", rules=self.rules)
        if "result" not in m:
            return []
        answered = self._methods.pop(self._key(m.get("id")), None)
        spec = self.table.find(answered, request=True) if answered is not None else None
        if spec is None or spec.result is None:
            return []
        return validate_value(m["result"], spec.result, "$.result", rules=self.rules)
