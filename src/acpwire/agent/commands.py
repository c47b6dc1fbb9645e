"""Slash commands an app publishes (slash-commands.mdx) and how a prompt invokes one."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from .. import schema as s
from ..schema import UNSET

__all__ = ["Command", "parse_command"]


@dataclass(frozen=True)
class Command:
    """An entry of ``available_commands_update``; ``hint`` describes free-text input."""

    name: str
    description: str
    hint: str | None = None

    def to_wire(self) -> s.AvailableCommand:
        return s.AvailableCommand(
            name=self.name,
            description=self.description,
            input=UNSET if self.hint is None else s.UnstructuredCommandInput(hint=self.hint),
        )

    @cached_property
    def wire(self) -> s.AvailableCommand:
        """:meth:`to_wire`, built once: every new session publishes the same commands.
        Shared, so read it only (encode it), never change it."""
        return self.to_wire()


def parse_command(text: str) -> tuple[str, str] | None:
    """``("name", "rest")`` when ``text`` starts with ``/name``; otherwise None."""
    stripped = text.lstrip()
    if not stripped.startswith("/") or len(stripped) == 1:
        return None
    name, _, rest = stripped[1:].partition(" ")
    if not name or "/" in name:
        return None
    return name, rest.strip()
