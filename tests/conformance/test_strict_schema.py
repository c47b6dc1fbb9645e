"""The strict validator ``acp check`` uses needs no npm and no jsonschema, and it is strict.

It accepts every message of the real agents' captures, and every payload the official JSON
Schema rejects after a mutation (a required field removed, a value of the wrong type, a
string outside its enumeration) it rejects too; a field added to a spec-defined object is
caught even though the official schema leaves its objects open (EXT-002).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema.validators import validator_for

from acpwire.schema.methods import BY_NAME
from acpwire.testing.strict import StrictValidator, validate_value

FREE_FORM = frozenset({"_meta", "rawInput", "rawOutput", "data", "requestedSchema"})
"""Keys whose values are open by design (extensions, tool input/output, JSON Schemas)."""
PER_PAYLOAD = 30
"""Mutations tried per payload, spread over all of them (the official validator is slow)."""
MAPS = frozenset({("CreateElicitationResponse", ("content",))})
"""Objects that are maps (the user's answers by field name), not records with fixed fields."""


def payloads(captures_dir: Path) -> list[tuple[str, str, Any, str]]:
    """(label, schema definition, payload, model attribute) of each capture's typed payload.

    The agent's params and results, and the client's results (the client's requests are
    left out: the captures' clients send invalid params on purpose).
    """
    out: list[tuple[str, str, Any, str]] = []
    for path in sorted(captures_dir.glob("*.jsonl")):
        asked: dict[str, dict[Any, str]] = {"client->agent": {}, "agent->client": {}}
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            msg, direction = rec.get("msg"), rec.get("dir")
            if not isinstance(msg, dict) or direction not in asked:
                continue
            label = f"{path.stem}#{rec['seq']}"
            method = msg.get("method")
            if direction == "client->agent" and method is not None:
                if method in BY_NAME and "id" in msg:
                    asked[direction][msg["id"]] = method
                continue  # clients probing agents send invalid params on purpose
            if method in BY_NAME:
                if "id" in msg:
                    asked[direction][msg["id"]] = method
                params = msg["params"] if "params" in msg else {}
                out.append((label, BY_NAME[method].params_def, params, "params"))
                continue
            other = "agent->client" if direction == "client->agent" else "client->agent"
            answered = asked[other].get(msg.get("id"))
            spec = BY_NAME.get(answered) if answered else None
            if spec is not None and spec.result_def and "result" in msg:
                out.append((label, spec.result_def, msg["result"], "result"))
    return out


def model_of(definition: str, where: str, label: str) -> Any:
    for spec in BY_NAME.values():
        if where == "params" and spec.params_def == definition:
            return spec.params
        if where == "result" and spec.result_def == definition:
            return spec.result
    raise AssertionError(f"{label}: no model for {definition}")


def test_every_message_of_every_capture_is_valid(captures_dir: Path) -> None:
    cases = payloads(captures_dir)
    assert len(cases) > 300
    problems = [
        (label, str(p))
        for label, definition, payload, where in cases
        for p in validate_value(payload, model_of(definition, where, label))
    ]
    assert problems == []


def paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into ``value`` below its root, skipping free-form parts."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in FREE_FORM:
                continue
            yield (*path, key)
            yield from paths(item, (*path, key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from paths(item, (*path, n))


def at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def wrong_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "yes"
    if isinstance(value, (int, float)):
        return "12"
    if isinstance(value, str):
        return 12
    if isinstance(value, list):
        return {"items": value}
    if isinstance(value, dict):
        return [value]
    return None


def mutations(payload: Any) -> Iterator[tuple[str, Any]]:
    for path in paths(payload):
        parent, key = at(payload, path[:-1]), path[-1]
        if isinstance(parent, dict):
            removed = copy.deepcopy(payload)
            del at(removed, path[:-1])[key]
            yield f"without {path}", removed
        retyped = copy.deepcopy(payload)
        at(retyped, path[:-1])[key] = wrong_type(parent[key])
        yield f"{path} retyped", retyped
        if isinstance(parent[key], str):
            bogus = copy.deepcopy(payload)
            at(bogus, path[:-1])[key] = "acp-check-bogus"
            yield f"{path} = 'acp-check-bogus'", bogus


def distinct(cases: list[tuple[str, str, Any, str]]) -> list[tuple[str, str, Any, str]]:
    """One payload per definition and update kind: the mutations are what multiply."""
    seen: set[tuple[str, str]] = set()
    out = []
    for case in cases:
        update = case[2].get("update") if isinstance(case[2], dict) else None
        kind = update.get("sessionUpdate") if isinstance(update, dict) else ""
        if (case[1], str(kind)) not in seen:
            seen.add((case[1], str(kind)))
            out.append(case)
    return out


def test_what_the_official_schema_rejects_is_rejected(
    captures_dir: Path, official_schema: dict[str, Any]
) -> None:
    cls = validator_for(official_schema)
    cases = distinct(payloads(captures_dir))
    assert len(cases) > 40
    checked = 0
    missed: list[str] = []
    for label, definition, payload, where in cases:
        official = cls({"$ref": f"#/$defs/{definition}", "$defs": official_schema["$defs"]})
        model = model_of(definition, where, label)
        every = list(mutations(payload))
        for what, mutated in every[:: max(1, len(every) // PER_PAYLOAD)]:
            if official.is_valid(mutated):
                continue
            checked += 1
            if not validate_value(mutated, model):
                missed.append(f"{label} {definition} {what}")
    assert checked > 400
    assert missed == []


def test_a_field_added_to_a_spec_defined_object_is_caught(captures_dir: Path) -> None:
    """Unknown fields outside ``_meta`` and free-form values, at any depth (EXT-002)."""
    missed: list[str] = []
    checked = 0
    for label, definition, payload, where in distinct(payloads(captures_dir)):
        model = model_of(definition, where, label)
        objects = [()] + [
            p
            for p in paths(payload)
            if isinstance(at(payload, p), dict) and (definition, p) not in MAPS
        ]
        for path in objects:
            mutated = copy.deepcopy(payload)
            at(mutated, path)["acpCheckExtra"] = 1
            checked += 1
            found = validate_value(mutated, model)
            if not any(
                p.kind == "unknown-field" and p.path.endswith(".acpCheckExtra") for p in found
            ):
                missed.append(f"{label} {definition} {path}: {found}")
    assert checked > 100
    assert missed == []


@pytest.mark.parametrize(
    ("payload", "kind", "path"),
    [
        ({"stopReason": "done"}, "enum", "$.stopReason"),
        ({"stopReason": "end_turn", "tokens": 3}, "unknown-field", "$.tokens"),
        ({}, "missing-field", "$.stopReason"),
        ({"stopReason": 1}, "type", "$.stopReason"),
        ({"stopReason": "end_turn", "_meta": {"anything": [1, {"goes": True}]}}, None, None),
    ],
)
def test_each_kind_of_problem_is_named_with_its_path(
    payload: dict[str, Any], kind: str | None, path: str | None
) -> None:
    found = validate_value(payload, BY_NAME["session/prompt"].result)
    assert [(p.kind, p.path) for p in found] == ([] if kind is None else [(kind, path)])


def test_results_are_checked_against_the_method_they_answer() -> None:
    validator = StrictValidator()
    validator.note_request({"jsonrpc": "2.0", "id": "7", "method": "session/new", "params": {}})
    assert validator.validate({"jsonrpc": "2.0", "id": 7, "result": {}}) == []  # id 7 is not "7"
    problems = validator.validate({"jsonrpc": "2.0", "id": "7", "result": {}})
    assert [p.path for p in problems] == ["$.result.sessionId"]
    assert [p.kind for p in validator.validate({"jsonrpc": "2.0", "method": "nope/x"})] == [
        "method"
    ]
    assert validator.validate({"jsonrpc": "2.0", "method": "_vendor/x", "params": 3}) == []
