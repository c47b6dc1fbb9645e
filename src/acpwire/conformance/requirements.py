"""The rules ``acp check`` tests from outside, each with an id, a level and where it comes from.

Each rule has the id used across acpwire's tests and docs, its level, the side that
must comply, one sentence in our own words, the page it comes from and its *origin*:

``spec``      the ACP v1 documentation (``docs/protocol/v1/``); the ids are those of
              acpwire's full requirement list;
``rfd``       the draft RFD "Streamable HTTP & WebSocket Transport"
              (``docs/rfds/streamable-http-websocket-transport.mdx``), ids ``RFD-HTTP-*``
              and ``RFD-WS-*``; ``source`` names the RFD section. Not part of ACP v1 yet;
``security``  what acpwire expects where the spec says nothing: of a client that serves
              files and terminals to an untrusted agent (docs/security.md, "The client
              sandbox"), ids ``SANDBOX-*``; of any remote endpoint that runs an agent for
              others (docs/security.md), ids ``SEC-*``;
``project``   acpwire's own rules: for clients, tolerant in what they accept: survive any
              agent output, never hang (docs/check.md, "Checking a client"), ids
              ``CLIENT-*``; for agents that speak the v2 draft, that it stays opt-in
              (docs/protocol-currency.md), ids ``VERSION-*``;
``jsonrpc``   JSON-RPC 2.0 itself, where ACP's pages say nothing more, ids ``JSONRPC-*``;
``web``       a web standard the endpoint relies on (``SSE-*``: the HTML Standard's
              server-sent events);
``draft``     the ACP v2 draft (``docs/protocol/v2/draft/``, schema ``v2/schema.json`` of
              the pinned SDK), ids ``V2-*``: checked only when asked (``acp check
              --protocol 2``); the draft may change.

The rules are data: ``requirements.json`` beside this module, one rule a line, read once
when this module is imported and checked on the way in (an unknown level, side or origin
is an error, not a rule). The sentences paraphrase; the sources are the authority. Every
check of :mod:`acpwire.conformance` declares the ids it proves, and a test shows each id
here is proved by some check and every ``spec`` id exists in the full requirement list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from typing import Literal

import msgspec

__all__ = [
    "BY_ID",
    "REQUIREMENTS",
    "V2_REQUIREMENTS",
    "Level",
    "Origin",
    "Requirement",
    "Side",
    "parse_requirements",
    "requirement",
]

Level = Literal["MUST", "SHOULD"]
Side = Literal["agent", "client", "both", "server"]
"""``server``: the remote endpoint that hosts an agent (the RFD's and the security rules)."""
Origin = Literal["spec", "rfd", "security", "project", "web", "draft", "jsonrpc"]


@dataclass(frozen=True, slots=True)
class Requirement:
    """One rule: ``id`` (e.g. ``RPC-006``), level, who complies, a sentence, its source."""

    id: str
    level: Level
    side: Side
    text: str
    source: str
    origin: Origin = "spec"


def parse_requirements(data: bytes) -> tuple[Requirement, ...]:
    """Rules from JSON in the format of ``requirements.json``; ``msgspec.ValidationError``
    for a field of the wrong kind or value, ``ValueError`` for an id listed twice."""
    rules = msgspec.json.decode(data, type=tuple[Requirement, ...])
    seen: set[str] = set()
    for rule in rules:
        if rule.id in seen:
            raise ValueError(f"requirements.json lists {rule.id} twice")
        seen.add(rule.id)
    return rules


_ALL = parse_requirements(files("acpwire.conformance").joinpath("requirements.json").read_bytes())
REQUIREMENTS: tuple[Requirement, ...] = tuple(r for r in _ALL if r.origin != "draft")
"""Every rule ``acp check`` tests by default."""
V2_REQUIREMENTS: tuple[Requirement, ...] = tuple(r for r in _ALL if r.origin == "draft")
"""The v2 draft's rules, kept apart: ``acp check`` tests them only with ``--protocol 2``."""
BY_ID: Mapping[str, Requirement] = {r.id: r for r in _ALL}


def requirement(id: str) -> Requirement:
    """The rule with this id (``KeyError`` when acpwire does not list it)."""
    return BY_ID[id]
