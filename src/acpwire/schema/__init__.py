"""Typed models of the ACP v1 stable schema, generated from the official JSON Schema.

Attributes are snake_case; on the wire every field has the schema's exact
camelCase name. Optional fields default to :data:`UNSET` and are omitted when
unset (an explicit ``None`` is sent as ``null``); :func:`unset_to_none` and
:func:`none_to_unset` convert where code means "no value" by ``None``. Unions are
open: a member this version does not know arrives as an ``Unknown...`` value
holding the raw JSON (see :mod:`acpwire.schema._base`).
"""

from . import _generated_models
from ._base import UNSET, AcpModel, UnknownVariant, UnsetType, none_to_unset, unset_to_none
from ._generated_models import *  # noqa: F403
from .codec import convert, decode, encode, to_json

__all__ = [
    "UNSET",
    "AcpModel",
    "UnknownVariant",
    "UnsetType",
    "convert",
    "decode",
    "encode",
    "none_to_unset",
    "to_json",
    "unset_to_none",
]
__all__ += _generated_models.__all__
