"""Validate JSON-RPC messages against an official ACP JSON Schema (v1, or the v2 draft).

Needs the ``jsonschema`` package. Each message is checked as a JSON-RPC 2.0
envelope, and its params or result against the exact schema definition the
method table names for it (the schema's catch-all ``anyOf`` would accept any
params through its extension branch, so it is not enough on its own).

Give it ``schema.json`` to hold messages to stable ACP (an unstable method then
fails: its definition is not there) or ``schema.unstable.json`` for a connection
that opted in to unstable ACP. A v2 schema (``schema/v2``) is checked with the v2
method table; the version is told from the schema itself unless ``table`` says.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..schema.methods import V1_UNSTABLE, V2_ALL, MethodSpec, MethodTable

if TYPE_CHECKING:
    from jsonschema.protocols import Validator


def load_official_schema(path: str | Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(path).read_text())
    return data


class SchemaValidator:
    """Checks messages one at a time; remembers request ids to check results."""

    def __init__(self, schema: dict[str, Any], table: MethodTable | None = None) -> None:
        try:
            from jsonschema.validators import validator_for
        except ImportError as exc:  # pragma: no cover - dev dependency
            raise ImportError("SchemaValidator needs jsonschema: pip install jsonschema") from exc
        self._validator_class = validator_for(schema)
        self._schema = schema
        if table is None:
            # Only the v2 draft names its session/update params UpdateSessionNotification.
            table = V2_ALL if "UpdateSessionNotification" in schema["$defs"] else V1_UNSTABLE
        self.table = table
        self._validators: dict[str, Validator] = {}
        self._methods: dict[Any, str] = {}
        self._error = self._validator("Error")

    def _validator(self, definition: str) -> Validator:
        v = self._validators.get(definition)
        if v is None:
            sub = {"$ref": f"#/$defs/{definition}", "$defs": self._schema["$defs"]}
            v = self._validators[definition] = self._validator_class(sub)
        return v

    def _definition(self, spec: MethodSpec, name: str) -> str:
        if name not in self._schema["$defs"]:
            raise AssertionError(
                f"{spec.name} ({spec.stability}) is not in this schema: {name} is not defined"
            )
        return name

    def note_request(self, message: Any) -> None:
        """Record a request sent by the *other* side, so this side's answer can be checked."""
        if isinstance(message, dict) and "method" in message and "id" in message:
            self._methods[message["id"]] = message["method"]

    def validate(self, message: Any) -> None:
        """Raise ``jsonschema.ValidationError`` (or ``AssertionError``) if ``message`` is not valid ACP."""
        assert isinstance(message, dict), f"not a JSON object: {message!r}"
        message = cast("dict[str, Any]", message)
        assert message.get("jsonrpc") == "2.0", f"missing jsonrpc 2.0: {message!r}"
        if "method" in message:
            method = message["method"]
            assert isinstance(method, str)
            if "id" in message:
                rid = message["id"]
                assert isinstance(rid, (int, str)) and not isinstance(rid, bool), (
                    f"bad id in {message!r}"
                )
            spec = self.table.find(method, request="id" in message)
            if spec is not None:
                self._validator(self._definition(spec, spec.params_def)).validate(
                    message.get("params")
                )
            elif method.startswith("_") or method.startswith("$/"):
                params = message.get("params")
                assert params is None or isinstance(params, (dict, list)), (
                    f"bad params in {message!r}"
                )
            else:
                raise AssertionError(f"unknown method sent: {method}")
            return
        assert "id" in message, f"response without id: {message!r}"
        if "error" in message:
            assert "result" not in message
            self._error.validate(message["error"])
            return
        assert "result" in message, f"neither result nor error: {message!r}"
        method = self._methods.pop(message["id"], None)
        spec = self.table.find(method, request=True) if method else None
        if spec is not None and spec.result_def:
            self._validator(self._definition(spec, spec.result_def)).validate(message["result"])

    def validate_conversation(self, sent: Iterable[Any], received: Iterable[Any]) -> None:
        """Validate everything in ``sent``, using ``received`` to know what each result answers."""
        for m in received:
            self.note_request(m)
        for m in sent:
            self.validate(m)
