"""JSON encoding and decoding of the models, with the open-union hooks wired in."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

from ._base import dec_hook, enc_hook

T = TypeVar("T")

_encoder = msgspec.json.Encoder(enc_hook=enc_hook)


def encode(obj: Any) -> bytes:
    """Serialize a model (or any JSON-able value) to compact JSON bytes."""
    return _encoder.encode(obj)


_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def decoder_for(tp: Any) -> msgspec.json.Decoder[Any]:
    """A cached JSON decoder for ``tp``."""
    dec = _decoders.get(tp)
    if dec is None:
        dec = _decoders[tp] = msgspec.json.Decoder(tp, dec_hook=dec_hook)
    return dec


def decode(data: bytes | str, tp: type[T]) -> T:
    """Parse JSON into ``tp``; raises :class:`msgspec.ValidationError` on mismatch."""
    result: T = decoder_for(tp).decode(data)
    return result


def convert(obj: Any, tp: type[T]) -> T:
    """Turn already-parsed JSON (dicts, lists, ...) into ``tp``."""
    result: T = msgspec.convert(obj, tp, dec_hook=dec_hook)
    return result


def to_json(obj: Any) -> Any:
    """The plain JSON value (dicts, lists, ...) a model serializes to."""
    return msgspec.json.decode(_encoder.encode(obj))
