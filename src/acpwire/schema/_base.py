"""Machinery the generated models stand on (hand-written).

The generated modules declare msgspec Structs whose attributes are snake_case
and whose wire names are the schema's exact camelCase names. An optional field
defaults to :data:`UNSET` and is then left out of the JSON entirely, so *unset*
and *null* stay different things on the wire.

Unions are open. Each union in the schema (content blocks, session updates,
tool call content, ...) is declared for type checkers as a ``Union`` of its
variants plus an ``Unknown...`` class, and at run time as a marker class that
msgspec hands to :func:`dec_hook`. The hook reads the discriminator, converts
to the matching variant, and turns anything it does not recognise into the
union's ``Unknown...`` value carrying the raw JSON, so a newer peer never
breaks an older reader. Enumerations are plain strings at run time for the
same reason.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar, cast

import msgspec
import msgspec.inspect
from msgspec import UNSET, UnsetType

__all__ = [
    "UNSET",
    "AcpModel",
    "UnionLayout",
    "UnknownVariant",
    "UnsetType",
    "dec_hook",
    "enc_hook",
    "none_to_unset",
    "unset_to_none",
    "convert_tolerant",
    "register_native_union",
    "register_tagged_union",
    "register_untagged_union",
    "union_layout",
]


_T = TypeVar("_T")


def unset_to_none(value: _T | UnsetType) -> _T | None:
    """A received field as code reads it: ``None`` when the message left it out.

    (A field that may also be ``null`` gives ``None`` for both.)"""
    return None if isinstance(value, UnsetType) else value


def none_to_unset(value: _T | None) -> _T | UnsetType:
    """A value to send: left out of the message (:data:`UNSET`) when ``None``."""
    return UNSET if value is None else value


class AcpModel(
    msgspec.Struct,
    kw_only=True,
    omit_defaults=False,
    forbid_unknown_fields=False,
    repr_omit_defaults=True,
):
    """Base of every generated model."""


class UnknownVariant:
    """A union member this version of acpwire does not know.

    ``tag`` is the discriminator value that was received (``None`` when the
    object had none); ``raw`` is the object exactly as it arrived, and it is
    what gets sent if the value is written back out.
    """

    __slots__ = ("raw", "tag")

    def __init__(self, tag: str | None, raw: dict[str, Any]) -> None:
        self.tag = tag
        self.raw = raw

    def __repr__(self) -> str:
        return f"{type(self).__name__}(tag={self.tag!r}, raw={self.raw!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, UnknownVariant)
            and type(other) is type(self)
            and other.raw == self.raw
        )

    def __hash__(self) -> int:
        return hash((type(self), self.tag))


class _UnionDecoder:
    """How to turn a decoded JSON value into one member of a union."""

    __slots__ = ()

    def __call__(self, obj: Any) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class _Tagged(_UnionDecoder):
    __slots__ = ("default", "field", "tags", "unknown")

    def __init__(
        self,
        field: str,
        tags: dict[str, type[Any]],
        default: type[Any] | None,
        unknown: type[UnknownVariant],
    ) -> None:
        self.field = field
        self.tags = tags
        self.default = default
        self.unknown = unknown

    def __call__(self, obj: Any) -> Any:
        if not isinstance(obj, dict):
            raise ValueError(f"Expected `object`, got `{type(obj).__name__}`")
        # A decoded JSON object: its keys are strings.
        raw = cast("dict[str, Any]", obj)
        tag = raw.get(self.field)
        cls = self.tags.get(tag) if isinstance(tag, str) else None
        if cls is None:
            if tag is None and self.default is not None:
                cls = self.default
            else:
                return self.unknown(tag if isinstance(tag, str) else None, raw)
        return _convert(raw, cls)


class _Untagged(_UnionDecoder):
    __slots__ = ("choices", "unknown")

    def __init__(self, choices: Sequence[Any], unknown: type[UnknownVariant] | None) -> None:
        self.choices = tuple(choices)
        self.unknown = unknown

    def __call__(self, obj: Any) -> Any:
        first_error: Exception | None = None
        for choice in self.choices:
            try:
                return convert_tolerant(obj, choice)
            except (msgspec.ValidationError, ValueError) as exc:
                first_error = first_error or exc
        if self.unknown is not None and isinstance(obj, dict):
            return self.unknown(None, cast("dict[str, Any]", obj))
        raise ValueError(str(first_error) if first_error else "no union member matched")


_UNIONS: dict[type[Any], _UnionDecoder] = {}


def _convert(obj: Any, cls: type[Any]) -> Any:
    try:
        return convert_tolerant(obj, cls)
    except msgspec.ValidationError as exc:
        # msgspec prefixes the outer path itself; keep the inner one readable.
        text = str(exc)
        head, sep, path = text.rpartition(" - at `$")
        if sep:
            raise ValueError(f"{head} (at `${path.rstrip('`')}` inside)") from None
        raise ValueError(text) from None


# -- native unions and the tolerant converter ------------------------------------
#
# Unions whose members are all tagged Structs are declared as plain ``Union``s so
# that msgspec decodes them natively, in C. msgspec rejects a tag it does not know,
# so when a fast decode fails, :func:`convert_tolerant` walks the value again in
# Python: it builds the same objects, turns members with unknown tags into the
# union's ``Unknown...`` value, and reports real errors with their path.

_NATIVE_UNKNOWN: dict[frozenset[type[Any]], type[UnknownVariant]] = {}


def register_native_union(union: Any, unknown: type[UnknownVariant]) -> None:
    """Declare the ``Unknown...`` class of a natively decoded union."""
    members = frozenset(typing.get_args(union))
    _NATIVE_UNKNOWN[members] = unknown


def convert_tolerant(obj: Any, tp: Any) -> Any:
    """Like ``msgspec.convert(obj, tp)``, but unknown union members become ``Unknown...`` values."""
    try:
        return msgspec.convert(obj, tp, dec_hook=dec_hook)
    except msgspec.ValidationError:
        pass
    return _walk(obj, _type_info(tp), "$")


_INFO: dict[Any, Any] = {}


def _type_info(tp: Any) -> Any:
    info = _INFO.get(tp)
    if info is None:
        info = _INFO[tp] = msgspec.inspect.type_info(tp)
    return info


def _fail(message: str, path: str) -> msgspec.ValidationError:
    return msgspec.ValidationError(f"{message} - at `{path}`")


_KIND_NAMES: dict[type[Any], str] = {
    dict: "object",
    list: "array",
    str: "str",
    int: "int",
    float: "float",
    bool: "bool",
}


def _kind(obj: object) -> str:
    kind: type[object] = type(obj)
    return "null" if obj is None else _KIND_NAMES.get(kind, kind.__name__)


def _walk(obj: Any, t: Any, path: str) -> Any:
    i = msgspec.inspect
    if isinstance(t, i.AnyType):
        return obj
    if isinstance(t, i.StructType):
        if not isinstance(obj, dict):
            raise _fail(f"Expected `object`, got `{_kind(obj)}`", path)
        data = cast("dict[str, Any]", obj)
        if t.tag_field is not None and t.tag_field in data and data[t.tag_field] != t.tag:
            raise _fail(f"Invalid value {data[t.tag_field]!r}", f"{path}.{t.tag_field}")
        kwargs: dict[str, Any] = {}
        for f in t.fields:
            if f.encode_name in data:
                kwargs[f.name] = _walk(data[f.encode_name], f.type, f"{path}.{f.encode_name}")
            elif f.required:
                raise _fail(f"Object missing required field `{f.encode_name}`", path)
        return t.cls(**kwargs)
    if isinstance(t, i.UnionType):
        return _walk_union(obj, t, path)
    if isinstance(t, i.ListType):
        if not isinstance(obj, list):
            raise _fail(f"Expected `array`, got `{_kind(obj)}`", path)
        items = cast("list[object]", obj)
        return [_walk(v, t.item_type, f"{path}[{n}]") for n, v in enumerate(items)]
    if isinstance(t, i.DictType):
        if not isinstance(obj, dict):
            raise _fail(f"Expected `object`, got `{_kind(obj)}`", path)
        entries = cast("dict[str, Any]", obj)
        return {k: _walk(v, t.value_type, f"{path}[{k!r}]") for k, v in entries.items()}
    if isinstance(t, i.CustomType):
        try:
            return dec_hook(t.cls, obj)
        except (ValueError, TypeError) as exc:
            raise _fail(str(exc), path) from None
    # Scalars (str, int, float, bool, None and constrained forms): msgspec checks them.
    try:
        return msgspec.convert(obj, _scalar_type(t))
    except msgspec.ValidationError as exc:
        raise _fail(str(exc).partition(" - at `")[0], path) from None


def _walk_union(obj: Any, t: Any, path: str) -> Any:
    i = msgspec.inspect
    types = t.types
    if obj is None:
        if any(isinstance(x, i.NoneType) for x in types):
            return None
        raise _fail("Expected a value, got `null`", path)
    structs = [x for x in types if isinstance(x, i.StructType)]
    if isinstance(obj, dict) and structs and all(x.tag_field for x in structs):
        data = cast("dict[str, Any]", obj)
        tag_field = structs[0].tag_field or ""
        tag = data.get(tag_field)
        for x in structs:
            if x.tag == tag:
                return _walk(obj, x, path)
        unknown = _NATIVE_UNKNOWN.get(frozenset(x.cls for x in structs))
        if unknown is not None:
            return unknown(tag if isinstance(tag, str) else None, data)
        raise _fail(f"Invalid value {tag!r}", f"{path}.{tag_field}")
    # Other unions: the member whose JSON kind matches.
    for x in types:
        if _accepts(x, obj):
            return _walk(obj, x, path)
    raise _fail(f"Unexpected `{_kind(cast(object, obj))}`", path)


_SCALARS: dict[type[Any], Any] = {
    msgspec.inspect.StrType: str,
    msgspec.inspect.IntType: int,
    msgspec.inspect.FloatType: float,
    msgspec.inspect.BoolType: bool,
    msgspec.inspect.NoneType: type(None),
}


def _scalar_type(t: object) -> Any:
    return _SCALARS.get(type(t), object)


def _accepts(t: Any, obj: Any) -> bool:
    i = msgspec.inspect
    if isinstance(obj, bool):
        return isinstance(t, (i.BoolType, i.AnyType))
    if isinstance(obj, int):
        return isinstance(t, (i.IntType, i.FloatType, i.AnyType))
    if isinstance(obj, float):
        return isinstance(t, (i.FloatType, i.AnyType))
    if isinstance(obj, str):
        return isinstance(t, (i.StrType, i.AnyType))
    if isinstance(obj, list):
        return isinstance(t, (i.ListType, i.AnyType, i.CustomType))
    if isinstance(obj, dict):
        return isinstance(t, (i.StructType, i.DictType, i.AnyType, i.CustomType))
    return isinstance(t, i.AnyType)


def register_tagged_union(
    marker: type[Any],
    field: str,
    tags: dict[str, type[Any]],
    unknown: type[UnknownVariant],
    default: type[Any] | None = None,
) -> None:
    """Declare that fields typed ``marker`` hold a union discriminated by ``field``."""
    _UNIONS[marker] = _Tagged(field, tags, default, unknown)


def register_untagged_union(
    marker: type[Any], choices: Sequence[Any], unknown: type[UnknownVariant] | None = None
) -> None:
    """Declare a union whose members are told apart by trying each in order."""
    _UNIONS[marker] = _Untagged(choices, unknown)


@dataclass(frozen=True, slots=True)
class UnionLayout:
    """How the members of one union are told apart, for validators that walk JSON themselves."""

    field: str | None
    """The discriminator; None for a union whose members are tried in turn."""
    tags: Mapping[str, type[Any]]
    default: type[Any] | None
    """The member an object without the discriminator is."""
    choices: tuple[Any, ...]
    """Untagged unions: the members, in the order they are tried."""
    unknown: type[UnknownVariant] | None
    """What a member this version does not know becomes (None: such a value is an error)."""


def union_layout(union: Any) -> UnionLayout | None:
    """The layout of a union, given its marker class or the member classes of a native union."""
    if isinstance(union, frozenset):
        members = cast("frozenset[type[Any]]", union)
        unknown = _NATIVE_UNKNOWN.get(members)
        if unknown is None:
            return None
        return UnionLayout(None, {}, None, tuple(members), unknown)
    decoder = _UNIONS.get(union)
    if isinstance(decoder, _Tagged):
        return UnionLayout(decoder.field, dict(decoder.tags), decoder.default, (), decoder.unknown)
    if isinstance(decoder, _Untagged):
        return UnionLayout(None, {}, None, decoder.choices, decoder.unknown)
    return None


def dec_hook(tp: type[Any], obj: Any) -> Any:
    """msgspec decode hook: resolves the open unions of the generated models."""
    decoder = _UNIONS.get(tp)
    if decoder is None:
        raise NotImplementedError(f"acpwire has no decoder for {tp!r}")
    return decoder(obj)


def enc_hook(obj: Any) -> Any:
    """msgspec encode hook: unknown union members go out exactly as they came in."""
    if isinstance(obj, UnknownVariant):
        return obj.raw
    raise NotImplementedError(f"cannot encode {type(obj).__name__} as ACP JSON")


class UnionMarker:
    """Run-time stand-in for a union type in annotations (see module docstring)."""

    __slots__ = ()
    members: ClassVar[tuple[type[Any], ...]] = ()


Decoder = Callable[[bytes], Any]
