"""Moved to :mod:`acpwire.conformance.requirements`, beside the checks that cite the rules.
The old names still work until 0.2, each with a ``DeprecationWarning``."""

from __future__ import annotations

from .._lazy import moved_getattr

__getattr__ = moved_getattr(__name__, "acpwire.conformance.requirements")
