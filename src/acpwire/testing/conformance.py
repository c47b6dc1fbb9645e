"""Moved to :mod:`acpwire.conformance` (``acp check`` is a product of its own, not a test
helper). The old names still work until 0.2, each with a ``DeprecationWarning``."""

from __future__ import annotations

from .._lazy import moved_getattr

_NAMES = {
    name: name
    for name in (
        "CHECKS",
        "NEEDS",
        "CheckOptions",
        "CheckResult",
        "ClientCheckOptions",
        "EndpointTarget",
        "Report",
        "Status",
        "Wire",
        "judge_wire",
        "load_capture",
        "run_checks",
        "run_client_checks",
        "select_checks",
    )
}
__getattr__ = moved_getattr(__name__, "acpwire.conformance", {**_NAMES, "CheckSpec": "Check"})
