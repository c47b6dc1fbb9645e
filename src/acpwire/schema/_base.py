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

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, cast

import msgspec
from msgspec import UNSET, UnsetType

__all__ = [
    "UNSET",
    "AcpModel",
    "UnknownVariant",
    "UnsetType",
    "dec_hook",
    "enc_hook",
    "register_tagged_union",
    "register_untagged_union",
]


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
                return msgspec.convert(obj, choice, dec_hook=dec_hook)
            except (msgspec.ValidationError, ValueError) as exc:
                first_error = first_error or exc
        if self.unknown is not None and isinstance(obj, dict):
            return self.unknown(None, cast("dict[str, Any]", obj))
        raise ValueError(str(first_error) if first_error else "no union member matched")


_UNIONS: dict[type[Any], _UnionDecoder] = {}


def _convert(obj: Any, cls: type[Any]) -> Any:
    try:
        return msgspec.convert(obj, cls, dec_hook=dec_hook)
    except msgspec.ValidationError as exc:
        # msgspec prefixes the outer path itself; keep the inner one readable.
        text = str(exc)
        head, sep, path = text.rpartition(" - at `$")
        if sep:
            raise ValueError(f"{head} (at `${path.rstrip('`')}` inside)") from None
        raise ValueError(text) from None


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
