"""Elicitation helpers: form defaults and validation, URL descriptions, completion bookkeeping."""

from __future__ import annotations

from typing import Any

from acpwire import schema as s
from acpwire.client.elicitation import (
    ElicitationHandler,
    accept,
    decline,
    form_defaults,
    url_request,
    validate_form,
)

SCHEMA = s.ElicitationSchema(
    type="object",
    properties={
        "name": s.StringPropertySchema(min_length=2, max_length=5),
        "email": s.StringPropertySchema(format="email"),
        "color": s.StringPropertySchema(enum=["red", "blue"], default="red"),
        "count": s.IntegerPropertySchema(minimum=1, maximum=3, default=1),
        "ratio": s.NumberPropertySchema(maximum=1.0),
        "ok": s.BooleanPropertySchema(default=False),
        "tags": s.MultiSelectPropertySchema(
            items=s.StringMultiSelectItems(enum=["a", "b"]), max_items=1
        ),
        "when": s.StringPropertySchema(format="date"),
    },
    required=["name"],
)


def test_form_defaults_prefill_declared_defaults() -> None:
    """ELIC-010."""
    assert form_defaults(SCHEMA) == {"color": "red", "count": 1, "ok": False}


def test_a_conforming_answer_has_no_problems() -> None:
    answer: dict[str, Any] = {
        "name": "Ada",
        "email": "ada@example.com",
        "color": "blue",
        "count": 3,
        "ratio": 0.5,
        "ok": True,
        "tags": ["a"],
        "when": "2026-01-31",
    }
    assert validate_form(SCHEMA, answer) == []


def test_each_kind_of_wrong_value_is_reported_by_field() -> None:
    """ELIC-008, ELIC-014."""
    answer: dict[str, Any] = {
        "name": "A",
        "email": "nope",
        "color": "green",
        "count": True,
        "ratio": 2,
        "ok": "yes",
        "tags": ["a", "c"],
        "when": "tomorrow",
        "extra": 1,
    }
    problems = validate_form(SCHEMA, answer)
    fields = sorted(p.split(":")[0] for p in problems)
    assert fields == sorted(
        ["name", "email", "color", "count", "ratio", "ok", "tags", "when", "extra"]
    )
    assert validate_form(SCHEMA, {}) == ["name: required"]


def test_url_requests_warn_about_plain_http_and_punycode_hosts() -> None:
    """ELIC-025."""
    plain = url_request(
        s.ElicitationUrlMode(message="m", elicitation_id="e", url="http://xn--pple-43d.com/x")
    )
    assert plain.host == "xn--pple-43d.com"
    assert len(plain.warnings) == 2
    local = url_request(
        s.ElicitationUrlMode(message="m", elicitation_id="e", url="http://localhost:8080/cb")
    )
    assert local.warnings == ()


async def test_unknown_modes_and_unconfigured_modes_are_declined() -> None:
    """ELIC-030: an unknown mode is not treated as a known one."""
    handler = ElicitationHandler(url=lambda r: accept())
    form = s.ElicitationFormMode(message="m", requested_schema=s.ElicitationSchema())
    assert await handler.create(form) == decline()
    unknown = s.UnknownCreateElicitationRequest("telepathy", {"mode": "telepathy", "message": "m"})
    assert await handler.create(unknown) == decline()


async def test_completion_is_reported_once_and_only_for_ids_the_client_accepted() -> None:
    """ELIC-017, ELIC-019."""
    done: list[str] = []
    handler = ElicitationHandler(url=lambda r: accept(), on_complete=done.append)
    assert not handler.complete("never-asked")
    await handler.create(
        s.ElicitationUrlMode(message="m", elicitation_id="e1", url="https://x.example")
    )
    assert handler.complete("e1")
    assert not handler.complete("e1")
    assert done == ["e1"]


async def test_a_failing_callback_answers_cancel() -> None:
    def broken(request: Any) -> Any:
        raise RuntimeError("ui crashed")

    handler = ElicitationHandler(form=broken)
    answer = await handler.create(
        s.ElicitationFormMode(message="m", requested_schema=s.ElicitationSchema())
    )
    assert isinstance(answer, s.ElicitationCancelAction)
