"""JSON encoding and decoding of the models, with the open-union hooks wired in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from ._base import convert_tolerant, dec_hook, enc_hook

T = TypeVar("T")

_encoder = msgspec.json.Encoder(enc_hook=enc_hook)


def encode(obj: Any) -> bytes:
    """Serialize a model (or any JSON-able value) to compact JSON bytes."""
    return _encoder.encode(obj)


Decode = Callable[[Any], Any]
"""Bytes (or ``msgspec.Raw``) of one JSON text in, a model out."""

_decoders: dict[Any, Decode] = {}
_plain = msgspec.json.Decoder()


def decoder_for(tp: Any) -> Decode:
    """A cached decoding function for ``tp``.

    The fast path is msgspec's typed decoder (open unions of tagged members are
    native msgspec unions). When it rejects the input — an unknown union member, or
    a real error — the value is decoded again by :func:`convert_tolerant`, which
    keeps unknown members as ``Unknown...`` values and reports real errors with
    their path as :class:`msgspec.ValidationError`.
    """
    cached = _decoders.get(tp)
    if cached is not None:
        return cached
    fast = msgspec.json.Decoder(tp, dec_hook=dec_hook).decode

    def decode_one(data: Any) -> Any:
        try:
            return fast(data)
        except msgspec.ValidationError:
            return convert_tolerant(_plain.decode(data), tp)

    _decoders[tp] = decode_one
    return decode_one


_fast: dict[Any, Decode] = {}


def fast_decoder_for(tp: Any) -> Decode:
    """msgspec's own decoder for ``tp``: what :func:`decoder_for` tries first, without the
    fallback, for callers that handle :class:`msgspec.ValidationError` themselves (and
    then retry with :func:`decoder_for`) to save a call per message."""
    cached = _fast.get(tp)
    if cached is None:
        cached = _fast[tp] = msgspec.json.Decoder(tp, dec_hook=dec_hook).decode
    return cached


def decode(data: bytes | str, tp: type[T]) -> T:
    """Parse JSON into ``tp``; raises :class:`msgspec.ValidationError` on mismatch."""
    result: T = decoder_for(tp)(data)
    return result


def convert(obj: Any, tp: type[T]) -> T:
    """Turn already-parsed JSON (dicts, lists, ...) into ``tp``."""
    result: T = convert_tolerant(obj, tp)
    return result


def to_json(obj: Any) -> Any:
    """The plain JSON value (dicts, lists, ...) a model serializes to."""
    return msgspec.json.decode(_encoder.encode(obj))
