"""Asking the user to fill a form during a turn (``elicitation/create``, form mode).

What :meth:`Turn.ask <acpwire.agent.turn.Turn.ask>` does: the form goes to the client
as a requested schema, and the answer comes back as an :class:`Answer`. The client
should have checked an accepted answer against the form; the agent does not trust that
it did, so :attr:`Answer.problems` lists where the content does not match. Any action
the schema does not know counts as ``cancel`` (ELIC-029).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import schema as s
from ..schema import UNSET, none_to_unset
from .v1 import ClientPeer

__all__ = ["Answer", "ask_form"]


@dataclass(frozen=True)
class Answer:
    """The user's answer to :meth:`Turn.ask`: ``accept`` (with ``content``), ``decline`` or ``cancel``."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] = field(default_factory=dict[str, Any])
    problems: list[str] = field(default_factory=list[str])
    """Where an accepted ``content`` does not match the form (missing, extra or mistyped fields)."""

    @property
    def accepted(self) -> bool:
        return self.action == "accept"

    @property
    def valid(self) -> bool:
        """Accepted, and the content matches the requested schema."""
        return self.accepted and not self.problems


async def ask_form(
    client: ClientPeer,
    session_id: str,
    message: str,
    fields: Mapping[str, s.ElicitationPropertySchema],
    *,
    required: Sequence[str] = (),
    title: str | None = None,
    tool_call_id: str | None = None,
) -> Answer:
    """Send the form and read the answer (see the module docstring)."""
    params = s.ElicitationFormMode(
        message=message,
        requested_schema=s.ElicitationSchema(
            type="object",
            title=none_to_unset(title),
            properties=dict(fields),
            required=list(required) if required else UNSET,
        ),
        session_id=session_id,
        tool_call_id=none_to_unset(tool_call_id),
    )
    result = await client.create_elicitation(params)
    if isinstance(result, s.ElicitationAcceptAction):
        content = dict(result.content) if isinstance(result.content, dict) else {}
        from ..protocol.forms import validate_form  # loaded by the first answer that needs it

        return Answer("accept", content, validate_form(params.requested_schema, content))
    if isinstance(result, s.ElicitationDeclineAction):
        return Answer("decline")
    return Answer("cancel")
