"""Access policies: a per-call yes or no on the agent's file reads, file writes and terminals.

SDK policy (not spec text). A :class:`~acpwire.client.toolkit.ToolkitClient` built with
``access=policy`` asks the policy before it serves ``fs/read_text_file``,
``fs/write_text_file`` or ``terminal/create``, after the sandbox has resolved the path (or
the terminal's ``cwd``) inside the session's roots, so the policy judges the file that
would really be touched rather than a string with ``..`` or links in it. A ``False``
answer is sent to the agent as -32602 with ``data.reason == "denied"``; a policy that
raises denies too (fail closed). The sandbox's own refusals (outside the roots, protected
paths) come first and a policy cannot lift them.

This is not ``session/request_permission`` (:mod:`acpwire.client.permissions`): there the
agent asks before a tool call and may ignore the answer; here the client enforces, on
every call, whatever the agent asked or not. A bot that must never write::

    client = ToolkitClient(access=read_only)

When a whole method is never wanted, switching its capability off
(``write_files=False``, ``terminals=False``) is simpler still: the agent then knows not
to try. The policy is for decisions that depend on the call.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..protocol.errors import InvalidParams

__all__ = [
    "AccessPolicy",
    "AccessRequest",
    "ReadRequest",
    "TerminalRequest",
    "WriteRequest",
    "authorize",
    "decide",
    "read_only",
]

log = logging.getLogger("acpwire.client")


@dataclass(frozen=True)
class ReadRequest:
    """``fs/read_text_file``: ``path`` as the agent sent it, ``resolved`` the file to be read."""

    session_id: str
    path: str
    resolved: Path
    line: int | None
    limit: int | None


@dataclass(frozen=True)
class WriteRequest:
    """``fs/write_text_file``: ``path`` as sent, ``resolved`` the file to be written."""

    session_id: str
    path: str
    resolved: Path
    content: str


@dataclass(frozen=True)
class TerminalRequest:
    """``terminal/create``: the command, its arguments, the resolved ``cwd`` and the agent's ``env``."""

    session_id: str
    command: str
    args: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]


AccessRequest = ReadRequest | WriteRequest | TerminalRequest
"""One call the agent wants the client to make."""

AccessPolicy = Callable[[AccessRequest], "bool | Awaitable[bool]"]
"""Answers ``True`` to serve the call; a plain or an async function."""


def read_only(request: AccessRequest) -> bool:
    """Serve reads; refuse every write and every terminal."""
    return isinstance(request, ReadRequest)


async def decide(policy: AccessPolicy, request: AccessRequest) -> bool:
    """Run ``policy`` (sync or async) on ``request``; anything but ``True`` denies."""
    answer = policy(request)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer is True


async def authorize(
    policy: AccessPolicy | None, request: AccessRequest, data: Mapping[str, object]
) -> None:
    """Serve the call only if ``policy`` (when there is one) answers ``True``: otherwise
    -32602 with ``data`` and ``reason: denied``. A policy that raises denies too."""
    if policy is None:
        return
    try:
        allowed = await decide(policy, request)
    except Exception:
        log.exception("access policy failed; denying")
        allowed = False
    if not allowed:
        raise InvalidParams(
            "the client's access policy refused this call", {**data, "reason": "denied"}
        )
