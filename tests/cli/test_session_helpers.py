"""Helpers shared by both forms of `acp chat`: @path mentions and exit codes."""

from __future__ import annotations

from pathlib import Path

from acpwire import schema as s
from acpwire.cli.chat.session import (
    EXIT_CANCELLED,
    EXIT_OK,
    build_prompt,
    exit_code_for_stop_reason,
)


def test_mentions_of_existing_files_become_resource_links(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print(1)\n")
    blocks = build_prompt("look at @a.py and @missing.txt, thanks", tmp_path)
    assert isinstance(blocks[0], s.TextContent)
    assert blocks[0].text == "look at @a.py and @missing.txt, thanks"
    assert len(blocks) == 2
    link = blocks[1]
    assert isinstance(link, s.ResourceLink)
    assert link.uri == (tmp_path / "a.py").resolve().as_uri() and link.name == "a.py"


def test_mentions_are_embedded_when_the_agent_accepts_embedded_context(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print(1)\n")
    blocks = build_prompt("see @a.py", tmp_path, embed=True)
    resource = blocks[1]
    assert isinstance(resource, s.EmbeddedResource)
    assert isinstance(resource.resource, s.TextResourceContents)
    assert resource.resource.text == "print(1)\n"


def test_stop_reasons_map_to_distinct_exit_codes() -> None:
    codes = {
        exit_code_for_stop_reason(r)
        for r in ("cancelled", "refusal", "max_tokens", "max_turn_requests")
    }
    assert exit_code_for_stop_reason("end_turn") == EXIT_OK
    assert len(codes) == 4 and EXIT_OK not in codes and EXIT_CANCELLED in codes
