"""UNSET <-> None: the one pair of helpers every module uses (STYLE.md)."""

from __future__ import annotations

from acpwire import schema as s
from acpwire.schema import UNSET, none_to_unset, unset_to_none, v2


def test_none_is_left_out_of_the_message_and_a_value_is_sent() -> None:
    left_out = s.SessionMode(id="ask", name="Ask", description=none_to_unset(None))
    assert s.to_json(left_out) == {"id": "ask", "name": "Ask"}
    given = s.SessionMode(id="ask", name="Ask", description=none_to_unset("Asks first"))
    assert s.to_json(given)["description"] == "Asks first"


def test_a_field_left_out_reads_as_none_and_a_value_as_itself() -> None:
    mode = s.decode(b'{"id":"ask","name":"Ask"}', s.SessionMode)
    assert mode.description is UNSET and unset_to_none(mode.description) is None
    mode = s.decode(b'{"id":"ask","name":"Ask","description":""}', s.SessionMode)
    assert unset_to_none(mode.description) == ""  # a falsy value is still a value
    assert none_to_unset(0) == 0 and unset_to_none(False) is False


def test_v2_offers_the_same_pair() -> None:
    assert v2.unset_to_none is unset_to_none and v2.none_to_unset is none_to_unset
