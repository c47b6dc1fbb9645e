"""The checks ``acp check`` knows: a stable key, a title and the requirement ids each tests.

A check's level is the strongest level among its requirements, so a check that cites a
MUST rule fails the run. :func:`select_checks` turns ``--only`` tokens (check keys or
requirement ids) into check keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..requirements import BY_ID, Level

__all__ = ["CHECKS", "CHECKS_BY_KEY", "INDEPENDENT_CHECKS", "CheckSpec", "Status", "select_checks"]

Status = Literal["pass", "fail", "skip", "n/a"]


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """One check: a stable ``key`` (usable with ``--only``), a title and the rules it tests."""

    key: str
    title: str
    ids: tuple[str, ...]

    @property
    def level(self) -> Level:
        return "MUST" if any(BY_ID[i].level == "MUST" for i in self.ids) else "SHOULD"


CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec("initialize", "initialize answers the requested version 1", ("INIT-003", "INIT-008")),
    CheckSpec("version-newer", "asked for version 2, the agent answers 1", ("INIT-009",)),
    CheckSpec("version-unknown", "asked for version 65535, the agent answers 1", ("INIT-009",)),
    CheckSpec("agent-info", "initialize names the agent (agentInfo)", ("INIT-005",)),
    CheckSpec(
        "stdout-clean",
        "stdout carries only JSON-RPC messages, one per line",
        ("TRANS-001", "TRANS-003", "TRANS-004"),
    ),
    CheckSpec("schema", "every message matches the official v1 schema", ("SCHEMA-001", "INIT-017")),
    CheckSpec(
        "responses",
        "every request gets exactly one well-formed response with its id",
        ("RPC-001", "RPC-003", "RPC-005"),
    ),
    CheckSpec("unknown-method", "an unknown method is answered -32601", ("RPC-006",)),
    CheckSpec("ext-request", "an unknown _ request is answered", ("EXT-003",)),
    CheckSpec("ext-request-code", "an unknown _ request is answered -32601", ("EXT-004",)),
    CheckSpec("notification-unanswered", "notifications get no response", ("RPC-002",)),
    CheckSpec(
        "notifications-ignored",
        "unknown _ and $/ notifications are ignored",
        ("EXT-006", "RCANCEL-003"),
    ),
    CheckSpec("malformed-line", "the agent survives a line that is not JSON", ("RPC-009",)),
    CheckSpec(
        "malformed-line-error", "a line that is not JSON is answered -32700, id null", ("RPC-010",)
    ),
    CheckSpec("session-new", "session/new with an absolute cwd and no MCP servers", ("INIT-015",)),
    CheckSpec("session-unique", "two sessions get two different ids", ("SESS-002",)),
    CheckSpec("prompt", "a prompt ends with a valid stopReason", ("PROMPT-003", "PROMPT-005")),
    CheckSpec("turn-order", "a turn's updates arrive before its response", ("PROMPT-003",)),
    CheckSpec("update-sessions", "session/update names only known sessions", ("PROMPT-006",)),
    CheckSpec(
        "cancel",
        "session/cancel ends the turn with stopReason cancelled",
        ("CANCEL-004", "CANCEL-005", "CANCEL-006"),
    ),
    CheckSpec("cancel-prompt", "a cancelled turn ends within a few seconds", ("CANCEL-003",)),
    CheckSpec(
        "after-cancel",
        "the session takes a prompt after a cancelled turn",
        ("CANCEL-008", "PROMPT-007"),
    ),
    CheckSpec(
        "capability-gates",
        "no fs/terminal/elicitation calls or boolean options the client did not advertise",
        ("FS-002", "TERM-002", "ELIC-005", "CFG-003"),
    ),
    CheckSpec(
        "session-load",
        "session/load replays the history before responding",
        ("SESS-006", "SESS-007"),
    ),
    CheckSpec(
        "session-list", "session/list shape and cwd filter", ("LIST-004", "LIST-005", "LIST-011")
    ),
    CheckSpec("set-mode", "session/set_mode with an offered mode succeeds", ("MODE-002",)),
    CheckSpec("mode-state", "currentModeId is one of the offered modes", ("MODE-004",)),
    CheckSpec("config-options", "every config option has a valid current value", ("CFG-010",)),
    CheckSpec(
        "set-config-option", "session/set_config_option returns the complete list", ("CFG-012",)
    ),
    CheckSpec(
        "unadvertised-methods",
        "optional methods not advertised are answered with errors",
        ("SESS-030",),
    ),
    CheckSpec("shutdown", "the agent exits when its stdin is closed", ("SHUT-001",)),
)
CHECKS_BY_KEY: Mapping[str, CheckSpec] = {c.key: c for c in CHECKS}
INDEPENDENT_CHECKS = frozenset(
    {
        "version-newer",
        "version-unknown",
        "shutdown",
        "stdout-clean",
        "schema",
        "responses",
        "capability-gates",
        "update-sessions",
    }
)
"""Checks that run whatever happened on the main connection."""


def select_checks(only: Sequence[str] | None) -> frozenset[str]:
    """Keys of the checks named by ``only`` (check keys or requirement ids; all when empty).

    Raises ``ValueError`` naming anything that is neither.
    """
    if not only:
        return frozenset(CHECKS_BY_KEY)
    chosen: set[str] = set()
    unknown: list[str] = []
    for token in only:
        token = token.strip()
        if not token:
            continue
        if token in CHECKS_BY_KEY:
            chosen.add(token)
            continue
        matches = {c.key for c in CHECKS if token.upper() in c.ids}
        if not matches:
            unknown.append(token)
        chosen |= matches
    if unknown:
        raise ValueError(f"unknown check or requirement id: {', '.join(unknown)}")
    return frozenset(chosen)
