"""Protocol version negotiation (initialization.mdx, "Protocol version"; the v2 draft).

The client sends the latest version it supports. An agent that supports it
answers with the same number; otherwise it answers with the latest version it
does support, and a client that cannot speak that version should close.

A v1 agent (acpwire's default) answers every request with 1 (:func:`negotiate`).
An agent that also serves the v2 draft picks with :func:`select_version`. A draft is
opt-in on both sides, so it is answered only to a client that asked for exactly its
number: a client asking for 2 gets 2, every other request gets 1. In particular a v1
client that asks for a later version than it speaks (65535, say), expecting the
agent's newest *supported* version, gets 1 and an answer it can read, not a v2 one.
An agent whose author makes the draft its default (``draft_default``; the
applications' ``v2_default=True``) answers 2 to requests above 2 too, as the
TypeScript SDK's protocol router does. A request below every version served is
refused ``-32022`` with ``{"requested", "supported"}`` (only a v2-only agent meets
that: with v1 served, a request below 1 keeps v1's answer, 1). A ``protocolVersion``
that is not an integer of 0..65535 (schema ``ProtocolVersion``, uint16) is ``-32602``.

A client offering v2 (:func:`v2_offer`) sends one ``initialize`` that reads right
in both versions: v2's ``info`` and ``capabilities`` plus v1's ``clientInfo`` and
``clientCapabilities`` (both schemas leave the params object open). A v1 agent,
which answers 1, then knows what the client can do; a v2 agent never looks at the
v1 fields. Everything here is plain data in and out: no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, cast

from .errors import InvalidParams, UnsupportedProtocolVersion

PROTOCOL_VERSION = 1
"""The ACP version this library speaks by default."""

SUPPORTED_VERSIONS: frozenset[int] = frozenset({1})
"""The versions a v1-only peer (the default) speaks."""

V2_DRAFT = 2
"""The v2 draft's version number; spoken only by applications that opt in."""

DRAFT_VERSIONS: frozenset[int] = frozenset({V2_DRAFT})
"""Versions that are drafts: answered only when asked for exactly (see the module text)."""

MAX_VERSION = 0xFFFF
"""``ProtocolVersion`` is a uint16 in the v2 schema."""

UNKNOWN_INFO: Mapping[str, str] = {"name": "unknown", "version": "unknown"}
"""Stands for a missing or malformed ``info`` in a v2 ``initialize`` written for a newer
version than 2 (its shape may have changed; the request is not refused for it)."""


def negotiate(requested: int) -> int:
    """The version a v1-only agent answers when a client asks for ``requested``."""
    if requested in SUPPORTED_VERSIONS:
        return requested
    return PROTOCOL_VERSION


def requested_version(params: object) -> int:
    """The ``protocolVersion`` of ``initialize`` params; ``-32602`` when it is not one."""
    value = (
        cast("dict[str, object]", params).get("protocolVersion")
        if isinstance(params, dict)
        else None
    )
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_VERSION:
        raise InvalidParams(
            "initialize.protocolVersion must be an integer from 0 to 65535",
            {"protocolVersion": value},
        )
    return value


def answered_version(result: object) -> object:
    """The ``protocolVersion`` of an ``initialize`` answer (plain JSON), whatever its type:
    read first, since the version decides what the rest of the answer means."""
    return (
        cast("dict[str, object]", result).get("protocolVersion")
        if isinstance(result, dict)
        else None
    )


def v1_shaped(result: object) -> bool:
    """Whether an ``initialize`` answer is written in v1's shape whatever version it names:
    no v2 ``info`` (required in v2), v1's ``agentCapabilities`` or ``agentInfo`` instead.

    Some v1 agents echo a higher requested version (2) while speaking v1; a client that
    offered 2 reads such an answer as the v1 answer it is rather than fail on it."""
    if not isinstance(result, dict):
        return False
    answer = cast("dict[str, object]", result)
    return "info" not in answer and ("agentCapabilities" in answer or "agentInfo" in answer)


def select_version(requested: int, served: Collection[int], *, draft_default: bool = False) -> int:
    """The version an agent serving ``served`` answers to a request for ``requested``.

    A version served is answered when asked for. Otherwise the answer is the newest
    version served below the request, drafts left out unless ``draft_default`` (or
    unless only drafts are served: then a draft is all there is). Raises
    :class:`UnsupportedProtocolVersion` when nothing fits (see the module text).
    """
    if requested in served:
        return requested
    stable = [v for v in served if v not in DRAFT_VERSIONS]
    answerable = served if draft_default or not stable else stable
    fitting = [v for v in answerable if v <= requested]
    if fitting:
        return max(fitting)
    if PROTOCOL_VERSION in served:
        return PROTOCOL_VERSION  # v1's own rule: answer the version it speaks
    raise UnsupportedProtocolVersion(data={"requested": requested, "supported": sorted(served)})


def v2_initialize_params(params: Mapping[str, Any], requested: int) -> dict[str, Any]:
    """The params a v2 agent reads from an ``initialize`` it answers with 2.

    A request for exactly 2 is taken as it is (its model decides). One for a later
    version (answered 2 only by an agent that made the draft its default) was written for a schema this side does not know, so what does not fit
    v2 is dropped rather than refused: a malformed ``info`` becomes
    :data:`UNKNOWN_INFO`, malformed ``capabilities`` or ``_meta`` are left out (the
    schema reads both "default on error"). ``protocolVersion`` becomes 2.
    """
    out = dict(params)
    out["protocolVersion"] = V2_DRAFT
    if requested > V2_DRAFT:
        info = out.get("info")
        if not (
            isinstance(info, dict)
            and isinstance(cast("dict[str, object]", info).get("name"), str)
            and isinstance(cast("dict[str, object]", info).get("version"), str)
        ):
            out["info"] = dict(UNKNOWN_INFO)
        for key in ("capabilities", "_meta"):
            if key in out and not isinstance(out[key], dict):
                del out[key]
    return out


def v2_offer(
    v2_params: Mapping[str, Any],
    v1_capabilities: Mapping[str, Any] | None,
    v1_info: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """One ``initialize`` params object offering v2 that a v1 agent reads too (see the
    module text): the v2 params plus v1's ``clientCapabilities`` and ``clientInfo``."""
    offer = dict(v2_params)
    if v1_capabilities is not None:
        offer["clientCapabilities"] = dict(v1_capabilities)
    if v1_info is not None:
        offer["clientInfo"] = dict(v1_info)
    return offer
