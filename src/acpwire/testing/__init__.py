"""Helpers for testing ACP programs built with acpwire (imported by users' tests too).

``SchemaValidator`` checks messages against the official JSON Schema (it needs
``jsonschema`` and the schema file); ``StrictValidator`` checks them against the models
acpwire carries, strictly, with nothing else installed (what ``acp check`` uses). The
checker behind ``acp check`` is a product of its own: :mod:`acpwire.conformance`.
"""

from .recording import RecordingTransport, WireLog
from .schema_check import SchemaValidator, load_official_schema
from .strict import Problem, StrictValidator

__all__ = [
    "Problem",
    "RecordingTransport",
    "SchemaValidator",
    "StrictValidator",
    "WireLog",
    "load_official_schema",
]
