"""Every generated model round-trips and serializes to JSON the official schema accepts
(v1 and the v2 draft, each against its own schema)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest

from acpwire import schema as s
from acpwire.schema import _generated_models as generated
from acpwire.schema._base import _UNIONS, _Tagged
from acpwire.schema.v2 import _generated_models as generated_v2

ROOT = Path(__file__).resolve().parents[2]


def schema_cases(
    schema: dict[str, Any], module: ModuleType = generated
) -> list[tuple[str, type[Any], Any]]:
    """(id, model class, example wire JSON) for every stable model of ``module``, from
    the official schema it was generated from."""
    defs = schema["$defs"]
    cases: list[tuple[str, type[Any], Any]] = []
    by_doc = {}
    for name in module.__all__:
        cls = getattr(module, name)
        if isinstance(cls, type) and issubclass(cls, msgspec.Struct) and cls.__doc__:
            by_doc.setdefault(
                cls.__doc__.split("``")[-2] if "Schema: ``" in cls.__doc__ else name, []
            ).append(cls)
    for marker, decoder in _UNIONS.items():
        union = marker.__name__.removeprefix("_").removesuffix("Marker")
        if marker.__module__ != module.__name__:
            continue  # another version's union of the same name
        if union not in defs or not isinstance(decoder, _Tagged):
            continue
        stable_tags = {
            p.get("const")
            for b in defs[union].get("oneOf") or defs[union].get("anyOf") or []
            for p in b.get("properties", {}).values()
            if isinstance(p, dict)
        }
        for tag, cls in decoder.tags.items():
            if tag not in stable_tags:
                continue  # an unstable-only member
            cases.append((f"{union}.{tag}", cls, _example(defs[union], defs, tag=tag)))
        if decoder.default is not None:
            cases.append(
                (
                    f"{union}.default",
                    decoder.default,
                    _example(defs[union], defs, tag=None, default=True),
                )
            )
    tagged = {c for _, c, _ in cases}
    for name, d in defs.items():
        for cls in by_doc.get(name, []):
            if cls not in tagged and not cls.__struct_config__.tag_field:
                cases.append((name, cls, _example(d, defs)))
    return cases


def _example(
    sch: Any, defs: dict[str, Any], tag: str | None = None, default: bool = False, depth: int = 0
) -> Any:
    if not isinstance(sch, dict) or not sch:
        return {"any": [1, "two"]}
    if "$ref" in sch:
        return _example(defs[sch["$ref"].rsplit("/", 1)[-1]], defs, depth=depth)
    if "const" in sch:
        return sch["const"]
    result: Any = None
    branches = sch.get("oneOf") or sch.get("anyOf")
    if "allOf" in sch:
        for part in sch["allOf"]:
            value = _example(part, defs, depth=depth)
            result = {**(result or {}), **value} if isinstance(value, dict) else value
    if branches:
        chosen = None
        for b in branches:
            consts = [
                p.get("const") for p in b.get("properties", {}).values() if isinstance(p, dict)
            ]
            if tag is not None and tag in consts:
                chosen = b
                break
        if chosen is None:
            usable = [
                b
                for b in branches
                if b.get("type") != "null" and b.get("title") != "other" and "not" not in b
            ]
            if default:
                usable = [
                    b
                    for b in usable
                    if not any(
                        "const" in p
                        for p in b.get("properties", {}).values()
                        if isinstance(p, dict)
                    )
                ] or usable
            chosen = usable[0]
        value = _example(chosen, defs, depth=depth)
        result = (
            {**(result or {}), **value}
            if isinstance(value, dict) and (result is None or isinstance(result, dict))
            else value
        )
    t = sch.get("type")
    if isinstance(t, list):
        t = next(x for x in t if x != "null")
    if t == "object" or "properties" in sch:
        obj = dict(result or {})
        required = set(sch.get("required", []))
        for key, prop in sch.get("properties", {}).items():
            if key in obj and "const" not in prop:
                continue
            if key in required or depth < 3:
                obj[key] = _example(prop, defs, depth=depth + 1)
        ap = sch.get("additionalProperties")
        if isinstance(ap, dict) and ap and not sch.get("properties") and depth < 3:
            obj["key"] = _example(ap, defs, depth=depth + 1)
        return obj
    if result is not None:
        return result
    if t == "array":
        return [_example(sch.get("items", {}), defs, depth=depth + 1)] if depth < 4 else []
    if t == "string":
        return {
            "uri": "https://example.com/x",
            "date-time": "2025-01-01T00:00:00Z",
            "date": "2025-01-01",
            "email": "a@example.com",
        }.get(sch.get("format", ""), "/abs/text")
    if t == "integer":
        return 1
    if t == "number":
        return 0.5
    if t == "boolean":
        return True
    return {"any": [1, "two"]}


def _load_schema(name: str = "v1/schema.json") -> dict[str, Any] | None:
    sys.path.insert(0, str(ROOT / "tools"))
    from schema_source import find_schema

    path = find_schema(name)
    return json.loads(path.read_text()) if path else None


_SCHEMA = _load_schema()
_SCHEMA_V2 = _load_schema("v2/schema.json")
CASES = schema_cases(_SCHEMA) if _SCHEMA else []
CASES_V2 = (
    [(f"v2:{i}", c, w) for i, c, w in schema_cases(_SCHEMA_V2, generated_v2)] if _SCHEMA_V2 else []
)
ALL_CASES = [pytest.param(c, w, id=i) for i, c, w in CASES + CASES_V2]


@pytest.mark.parametrize(("cls", "wire"), ALL_CASES)
def test_model_round_trips_and_loses_nothing(cls: type[Any], wire: Any) -> None:
    """wire -> Python -> wire keeps every field; Python -> wire -> Python is the identity."""
    value = s.convert(wire, cls)
    assert s.to_json(value) == wire
    assert s.decode(s.encode(value), cls) == value


@pytest.mark.parametrize("version", [1, 2])
def test_every_stable_definition_with_an_object_shape_has_a_case(version: int) -> None:
    schema, cases = (_SCHEMA, CASES) if version == 1 else (_SCHEMA_V2, CASES_V2)
    assert schema is not None, "official schema not found"
    covered = {
        c.__doc__.split("``")[-2] for _, c, _ in cases if c.__doc__ and "Schema: ``" in c.__doc__
    }
    objects = {
        n
        for n, d in schema["$defs"].items()
        if d.get("type") == "object" and not d.get("x-docs-ignore")
    }
    covered |= {case_id.removeprefix("v2:").split(".")[0] for case_id, _, _ in cases}
    assert objects - covered == set()


@pytest.mark.parametrize(("cls", "wire"), ALL_CASES)
def test_examples_are_valid_per_the_official_schema(
    cls: type[Any], wire: Any, official_schema: dict[str, Any]
) -> None:
    """Guards the example builder itself: the round-trip cases are real ACP values."""
    import jsonschema

    if cls.__module__ == generated_v2.__name__:
        assert _SCHEMA_V2 is not None
        official_schema = _SCHEMA_V2

    definition = (
        cls.__doc__.split("``")[-2] if cls.__doc__ and "Schema: ``" in cls.__doc__ else None
    )
    assert definition in official_schema["$defs"]
    validator = jsonschema.Draft202012Validator(
        {"$ref": f"#/$defs/{definition}", "$defs": official_schema["$defs"]}
    )
    if cls.__struct_config__.tag_field and definition not in (
        "SessionConfigOption",
        "CreateElicitationRequest",
        "CreateElicitationResponse",
        "RequestPermissionOutcome",
    ):
        wire = {k: v for k, v in wire.items() if k != cls.__struct_config__.tag_field}
    errors = list(validator.iter_errors(wire))
    assert not errors, errors[0].message


def test_unset_fields_are_omitted_and_null_is_kept() -> None:
    update = s.ToolCallProgress(tool_call_id="t1", status="completed", title=None)
    assert json.loads(s.encode(update)) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "t1",
        "status": "completed",
        "title": None,
    }


def test_meta_keeps_its_wire_name() -> None:
    block = s.TextContent(text="hi", meta={"acpwire/x": {"nested": [1]}})
    assert json.loads(s.encode(block)) == {
        "type": "text",
        "text": "hi",
        "_meta": {"acpwire/x": {"nested": [1]}},
    }


def test_unknown_union_members_arrive_as_explicit_unknown_values_and_go_back_unchanged() -> None:
    raw = {"sessionId": "s", "update": {"sessionUpdate": "hologram", "depth": 3}}
    note = s.convert(raw, s.SessionNotification)
    assert isinstance(note.update, s.UnknownSessionUpdate)
    assert note.update.tag == "hologram"
    assert s.to_json(note) == raw


def test_unknown_content_block_inside_a_known_update_does_not_break_it() -> None:
    raw = {"sessionUpdate": "agent_message_chunk", "content": {"type": "video", "url": "x"}}
    update = s.convert(raw, s.SessionUpdate)
    assert isinstance(update, s.AgentMessageChunk)
    assert isinstance(update.content, s.UnknownContentBlock)
    assert s.to_json(update) == raw


def test_unknown_enum_values_are_kept_as_strings() -> None:
    call = s.convert(
        {"toolCallId": "t", "title": "x", "kind": "teleport", "status": "dreaming"}, s.ToolCall
    )
    assert (call.kind, call.status) == ("teleport", "dreaming")


def test_unknown_fields_are_tolerated() -> None:
    chunk = s.convert(
        {"content": {"type": "text", "text": "a", "future": 1}, "later": True}, s.ContentChunk
    )
    assert chunk.content == s.TextContent(text="a")


def test_discriminator_less_members_decode_to_their_default() -> None:
    server = s.convert({"name": "fs", "command": "mcp-fs", "args": [], "env": []}, s.McpServer)
    assert isinstance(server, s.McpServerStdio)
    method = s.convert({"id": "token", "name": "Token"}, s.AuthMethod)
    assert isinstance(method, s.AuthMethodAgent)


def test_wrong_types_report_the_path() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"toolCallId"):
        s.decode(
            b'{"sessionId":"a","update":{"sessionUpdate":"tool_call","toolCallId":3,"title":"x"}}',
            s.SessionNotification,
        )


@pytest.mark.slow
def test_generated_code_matches_the_generator() -> None:
    """The committed modules are exactly what tools/gen_schema.py produces from the pinned schema."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_schema.py"), "--check"],
        capture_output=True,
        text=True,
    )
    if result.returncode == 2:
        pytest.skip(result.stderr.strip())
    assert result.returncode == 0, result.stderr


def test_unknown_members_deep_inside_native_unions_are_kept_and_siblings_still_typed() -> None:
    raw = {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "tool_call",
            "toolCallId": "t",
            "title": "x",
            "content": [
                {"type": "content", "content": {"type": "hologram", "z": 1}},
                {"type": "diff", "path": "/a", "newText": "b"},
                {"type": "wormhole"},
            ],
        },
    }
    note = s.decode(json.dumps(raw).encode(), s.SessionNotification)
    update = note.update
    assert isinstance(update, s.ToolCallStart)
    assert isinstance(update.content, list)
    first, second, third = update.content
    assert isinstance(first, s.Content)
    assert isinstance(first.content, s.UnknownContentBlock)
    assert isinstance(second, s.Diff)
    assert isinstance(third, s.UnknownToolCallContent)
    assert s.to_json(note) == raw


def test_a_real_error_inside_a_known_member_is_still_an_error_with_its_path() -> None:
    bad = b'{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":5}}}'
    with pytest.raises(msgspec.ValidationError, match=r"update\.content\.text"):
        s.decode(bad, s.SessionNotification)
