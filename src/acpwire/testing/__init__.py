"""Helpers for testing ACP programs built with acpwire (imported by users' tests too)."""

from .recording import RecordingTransport, WireLog
from .schema_check import SchemaValidator, load_official_schema

__all__ = ["RecordingTransport", "SchemaValidator", "WireLog", "load_official_schema"]
