"""The mapping every adapter shares, on its own: tool kinds from names, titles, results."""

from __future__ import annotations

import pytest

from acpwire.adapters.bridge import result_text, tool_kind, tool_title


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("read_file", "read"),
        ("write_text_file", "edit"),
        ("runTests", "execute"),
        ("delete_branch", "delete"),
        ("rename", "move"),
        ("web_search", "search"),
        ("fetch_url", "fetch"),
        ("add_numbers", "other"),
    ],
)
def test_the_kind_comes_from_the_first_word_of_the_name_that_says_one(name: str, kind: str) -> None:
    assert tool_kind(name) == kind


def test_the_author_names_the_kind_of_a_tool_whose_name_says_nothing() -> None:
    assert tool_kind("add_numbers", {"add_numbers": "think"}) == "think"


def test_a_title_shows_a_short_first_text_argument() -> None:
    assert tool_title("read_file", {"path": "notes.txt", "line": 3}) == "read_file: notes.txt"
    assert tool_title("write", {"content": "a\nb"}) == "write"
    assert tool_title("add", {"a": 1}) == "add"


def test_results_are_text_for_the_client_and_huge_ones_are_cut() -> None:
    assert result_text("plain") == "plain"
    assert result_text({"a": [1, 2]}) == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    cut = result_text("x" * 100_000)
    assert cut.startswith("x" * 65536) and cut.endswith("(34464 more characters)")
