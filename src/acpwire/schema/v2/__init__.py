"""Typed models of the ACP v2 *draft*, generated from the official JSON Schema.

Opt-in and subject to change: the v2 draft may change incompatibly in any release
of the pinned schema (see ``docs/protocol-currency.md``). The models work as the v1
ones do (:mod:`acpwire.schema`): snake_case attributes with the schema's camelCase
wire names, :data:`~acpwire.schema.UNSET` for fields left out, open unions. Class
names repeat v1's where the schema does (``InitializeRequest``, ``PromptResponse``,
...), so import this module under its own name::

    from acpwire.schema import v2

    v2.PromptResponse(message_id="m1")
"""

from .. import (
    UNSET,
    AcpModel,
    UnknownVariant,
    UnsetType,
    convert,
    decode,
    encode,
    none_to_unset,
    to_json,
    unset_to_none,
)
from . import _generated_models
from ._generated_models import *  # noqa: F403

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
