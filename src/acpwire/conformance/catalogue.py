"""Every check ``acp check`` knows, gathered from the groups that declare them, in the order
reports list them (and docs/check.md's tables do): agents, clients, endpoints, the v2
draft; within each, the order of :data:`GROUPS` and of the declarations.

:func:`select_checks` turns ``--only`` tokens (check keys, requirement ids or target
kinds) into check keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from . import v2
from .agents import cancellation, handshake, jsonrpc, optional, sessions, tools, turns, wire_checks
from .clients import hostile, manners
from .clients import tools as client_tools
from .clients import wire_checks as client_wire_checks
from .endpoints import http, security, websocket
from .registry import TARGETS, Check, Group, Target

__all__ = ["CHECKS", "CHECKS_BY_KEY", "GROUPS", "checks_for", "select_checks"]

GROUPS: tuple[Group, ...] = (
    handshake.GROUP,
    jsonrpc.GROUP,
    sessions.GROUP,
    turns.GROUP,
    cancellation.GROUP,
    optional.GROUP,
    tools.GROUP,
    wire_checks.GROUP,
    manners.GROUP,
    hostile.GROUP,
    client_tools.GROUP,
    client_wire_checks.GROUP,
    http.GROUP,
    websocket.GROUP,
    security.GROUP,
    v2.GROUP,
)
"""Every group of checks, in report order."""

CHECKS: tuple[Check, ...] = tuple(check for group in GROUPS for check in group.checks)
CHECKS_BY_KEY: Mapping[str, Check] = {c.key: c for c in CHECKS}
if len(CHECKS_BY_KEY) != len(CHECKS):  # pragma: no cover - a declaration mistake
    raise ValueError("two checks share a key")


def checks_for(*targets: Target) -> tuple[Check, ...]:
    """The checks run against these kinds of target, in report order."""
    return tuple(c for c in CHECKS if c.target in targets)


def select_checks(only: Sequence[str] | None) -> frozenset[str]:
    """Keys of the checks named by ``only`` (all when empty): check keys, requirement ids,
    or a target kind (``agent``, ``client``, ``endpoint``, ``agent-v2``) for all its checks.

    Raises ``ValueError`` naming anything that is none of these.
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
        if token in TARGETS:
            chosen |= {c.key for c in CHECKS if c.target == token}
            continue
        matches = {c.key for c in CHECKS if token.upper() in c.ids}
        if not matches:
            unknown.append(token)
        chosen |= matches
    if unknown:
        raise ValueError(f"unknown check or requirement id: {', '.join(unknown)}")
    return frozenset(chosen)
