"""The ACP v1 rules an agent must (or should) follow that ``acp check`` tests from outside.

Each rule has the id used across acpwire's tests and docs, its level, the side that
must comply, one sentence in our own words and the spec page it comes from (the ACP
documentation, ``docs/protocol/v1/``). The sentences paraphrase; the spec is the
authority. :mod:`acpwire.testing.conformance` cites these ids in every check, and a
test proves each id here is checked by something and exists in the full list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["BY_ID", "REQUIREMENTS", "Level", "Requirement", "Side", "requirement"]

Level = Literal["MUST", "SHOULD"]
Side = Literal["agent", "client", "both"]


@dataclass(frozen=True, slots=True)
class Requirement:
    """One rule: ``id`` (e.g. ``RPC-006``), level, who complies, a sentence, its source."""

    id: str
    level: Level
    side: Side
    text: str
    source: str


def _r(id: str, level: Level, side: Side, text: str, source: str) -> Requirement:
    return Requirement(id, level, side, text, source)


REQUIREMENTS: tuple[Requirement, ...] = (
    # transports.mdx
    _r("TRANS-001", "MUST", "both", "Messages are UTF-8 text.", "transports.mdx"),
    _r(
        "TRANS-003",
        "MUST",
        "both",
        "On stdio a message is a single line ending in a newline; no line breaks inside it.",
        "transports.mdx#stdio",
    ),
    _r(
        "TRANS-004",
        "MUST",
        "agent",
        "The agent's stdout carries ACP messages only; logging belongs on stderr.",
        "transports.mdx#stdio",
    ),
    # JSON-RPC basics (overview.mdx, JSON-RPC 2.0)
    _r(
        "RPC-001",
        "MUST",
        "both",
        "A response holds a result or an error, never both; an error has an integer code "
        "and a string message.",
        "overview.mdx",
    ),
    _r("RPC-002", "MUST", "both", "Notifications are never answered.", "overview.mdx"),
    _r(
        "RPC-003",
        "MUST",
        "both",
        "A response carries the id of its request, with the same JSON type.",
        "overview.mdx",
    ),
    _r("RPC-005", "MUST", "both", "Each request gets exactly one response.", "overview.mdx"),
    _r(
        "RPC-006",
        "MUST",
        "agent",
        "A request for a method the agent does not have is answered -32601.",
        "overview.mdx",
    ),
    _r(
        "RPC-009",
        "MUST",
        "agent",
        "An input line that is not JSON neither stops the agent nor spoils its output; "
        "later requests are still answered.",
        "overview.mdx",
    ),
    _r(
        "RPC-010",
        "SHOULD",
        "agent",
        "If an unparseable line is answered, the answer is error -32700 with a null id.",
        "overview.mdx",
    ),
    _r(
        "SCHEMA-001",
        "MUST",
        "agent",
        "What the agent sends matches the official v1 JSON Schema for that method.",
        "schema.json",
    ),
    # initialization.mdx
    _r(
        "INIT-003",
        "MUST",
        "agent",
        "The initialize result names the chosen protocol version as an integer.",
        "initialization.mdx",
    ),
    _r(
        "INIT-005",
        "SHOULD",
        "agent",
        "The initialize result describes the agent (agentInfo with name and version).",
        "initialization.mdx#implementation-information",
    ),
    _r(
        "INIT-008",
        "MUST",
        "agent",
        "Asked for a version it supports, the agent answers with that version.",
        "initialization.mdx#version-negotiation",
    ),
    _r(
        "INIT-009",
        "MUST",
        "agent",
        "Asked for a version it does not support, the agent answers with the newest "
        "version it does support.",
        "initialization.mdx#version-negotiation",
    ),
    _r(
        "INIT-015",
        "MUST",
        "agent",
        "Every agent offers session/new, session/prompt, session/cancel and sends session/update.",
        "initialization.mdx#session-capabilities",
    ),
    _r(
        "INIT-017",
        "MUST",
        "agent",
        "agentCapabilities has the documented shape.",
        "initialization.mdx#agent-capabilities",
    ),
    # session-setup.mdx
    _r(
        "SESS-002",
        "MUST",
        "agent",
        "Each session/new yields a new, distinct sessionId.",
        "session-setup.mdx#creating-a-session",
    ),
    _r(
        "SESS-006",
        "MUST",
        "agent",
        "session/load streams the earlier conversation back as session/update notifications.",
        "session-setup.mdx#loading-sessions",
    ),
    _r(
        "SESS-007",
        "MUST",
        "agent",
        "The session/load response comes after the whole replay, not before or during it.",
        "session-setup.mdx#loading-sessions",
    ),
    _r(
        "SESS-030",
        "SHOULD",
        "agent",
        "An optional method whose capability is not advertised is answered with an error.",
        "initialization.mdx#capabilities",
    ),
    # session-list.mdx
    _r(
        "LIST-004",
        "MUST",
        "agent",
        "session/list answers with a sessions array (and maybe a nextCursor).",
        "session-list.mdx",
    ),
    _r(
        "LIST-005",
        "MUST",
        "agent",
        "With nothing matching, session/list returns an empty sessions array.",
        "session-list.mdx",
    ),
    _r(
        "LIST-011",
        "MUST",
        "agent",
        "A cwd filter keeps exactly the sessions with that cwd, listed with the cwd they "
        "were created with.",
        "session-list.mdx",
    ),
    # prompt-turn.mdx
    _r(
        "PROMPT-003",
        "MUST",
        "agent",
        "The end of a turn is the session/prompt response with a stopReason; the turn's "
        "updates come before it.",
        "prompt-turn.mdx#4-check-for-completion",
    ),
    _r(
        "PROMPT-005",
        "MUST",
        "agent",
        "stopReason is end_turn, max_tokens, max_turn_requests, refusal or cancelled.",
        "prompt-turn.mdx#stop-reasons",
    ),
    _r(
        "PROMPT-006",
        "MUST",
        "agent",
        "session/update only names sessions set up on this connection.",
        "prompt-turn.mdx#3-agent-reports-output",
    ),
    _r(
        "PROMPT-007",
        "SHOULD",
        "agent",
        "A session takes another prompt after a turn has ended.",
        "prompt-turn.mdx#cancellation",
    ),
    _r(
        "CANCEL-003",
        "SHOULD",
        "agent",
        "After session/cancel the agent stops its work promptly.",
        "prompt-turn.mdx#cancellation",
    ),
    _r(
        "CANCEL-004",
        "MUST",
        "agent",
        "A cancelled turn ends with the stopReason cancelled.",
        "prompt-turn.mdx#cancellation",
    ),
    _r(
        "CANCEL-005",
        "MUST",
        "agent",
        "A cancelled turn is answered with a result, not a JSON-RPC error.",
        "prompt-turn.mdx#cancellation",
    ),
    _r(
        "CANCEL-006",
        "MUST",
        "agent",
        "Updates of a cancelled turn are sent before its session/prompt response.",
        "prompt-turn.mdx#cancellation",
    ),
    _r(
        "CANCEL-008",
        "SHOULD",
        "agent",
        "A session takes a new prompt after a cancelled turn.",
        "prompt-turn.mdx#cancellation",
    ),
    # capability-gated client methods
    _r(
        "FS-002",
        "MUST",
        "agent",
        "No fs/* call unless the client advertised that fs capability.",
        "file-system.mdx#checking-support",
    ),
    _r(
        "TERM-002",
        "MUST",
        "agent",
        "No terminal/* call unless the client advertised terminal support.",
        "terminals.mdx#checking-support",
    ),
    _r(
        "ELIC-005",
        "MUST",
        "agent",
        "No elicitation/create in a mode the client did not advertise.",
        "elicitation.mdx#checking-support",
    ),
    # session-modes.mdx, session-config-options.mdx
    _r(
        "MODE-002",
        "MUST",
        "agent",
        "session/set_mode with one of the offered mode ids succeeds.",
        "session-modes.mdx#from-the-client",
    ),
    _r(
        "MODE-004",
        "SHOULD",
        "agent",
        "currentModeId is one of the offered mode ids.",
        "session-modes.mdx",
    ),
    _r(
        "CFG-003",
        "MUST",
        "agent",
        "Boolean config options appear only if the client advertised support for them.",
        "session-config-options.mdx#boolean-config-options",
    ),
    _r(
        "CFG-010",
        "MUST",
        "agent",
        "Every config option has a current value, one of its listed values for a select.",
        "session-config-options.mdx#default-values",
    ),
    _r(
        "CFG-012",
        "MUST",
        "agent",
        "session/set_config_option answers with every config option and its current value.",
        "session-config-options.mdx#from-the-client",
    ),
    # extensibility.mdx, cancellation.mdx
    _r(
        "EXT-003",
        "MUST",
        "both",
        "A custom _-prefixed request is always answered, with its own id.",
        "extensibility.mdx#custom-requests",
    ),
    _r(
        "EXT-004",
        "SHOULD",
        "both",
        "An unknown custom request is answered -32601.",
        "extensibility.mdx#custom-requests",
    ),
    _r(
        "EXT-006",
        "SHOULD",
        "both",
        "Unknown custom notifications are ignored without an answer.",
        "extensibility.mdx#custom-notifications",
    ),
    _r(
        "RCANCEL-003",
        "SHOULD",
        "both",
        "Unknown $/ notifications are ignored without an answer.",
        "cancellation.mdx",
    ),
    # transports.mdx (lifecycle)
    _r(
        "SHUT-001",
        "SHOULD",
        "agent",
        "The agent exits soon after its stdin is closed.",
        "transports.mdx#stdio",
    ),
    # added for the checks of agents' answers beyond the basics
    _r(
        "OVR-001",
        "MUST",
        "both",
        "Paths carried by the protocol are absolute.",
        "overview.mdx#argument-requirements",
    ),
    _r(
        "OVR-002",
        "MUST",
        "both",
        "Line numbers count from 1.",
        "overview.mdx#argument-requirements",
    ),
    _r(
        "RPC-004",
        "SHOULD",
        "both",
        "Request ids are not null, and numeric ids are integers.",
        "schema.mdx#requestid",
    ),
    _r(
        "RPC-007",
        "MUST",
        "agent",
        "A request with params of the wrong shape is answered with an error, not a result.",
        "overview.mdx",
    ),
    _r("RPC-008", "SHOULD", "agent", "That error is -32602 (invalid params).", "overview.mdx"),
    _r(
        "RPC-011",
        "MUST",
        "both",
        'Every message is a JSON object with "jsonrpc": "2.0" and a valid JSON-RPC shape.',
        "overview.mdx",
    ),
    _r(
        "RPC-012",
        "MUST",
        "agent",
        "The agent never reuses the id of one of its requests that is still unanswered.",
        "overview.mdx",
    ),
    _r(
        "INIT-014",
        "MUST",
        "agent",
        "Prompts made of text and resource_link blocks are accepted without any capability.",
        "initialization.mdx#prompt-capabilities",
    ),
    _r(
        "AUTH-002",
        "MUST",
        "agent",
        "Terminal auth methods are offered only to clients that advertised auth.terminal.",
        "authentication.mdx",
    ),
    _r(
        "SESS-023",
        "SHOULD",
        "agent",
        "File-system work stays inside the session's folders.",
        "session-setup.mdx#working-directory",
    ),
    _r(
        "SESS-024",
        "MUST",
        "agent",
        "session/new accepts stdio MCP servers.",
        "session-setup.mdx#mcp-servers",
    ),
    _r(
        "SESS-027",
        "SHOULD",
        "agent",
        "The agent connects to the MCP servers the client gives it.",
        "session-setup.mdx#mcp-servers",
    ),
    _r(
        "SESS-028",
        "SHOULD",
        "agent",
        "session/new with a relative cwd is refused with an error.",
        "session-setup.mdx#working-directory",
    ),
    _r(
        "SESS-029",
        "SHOULD",
        "agent",
        "A request naming a session the agent does not know gets an error.",
        "session-setup.mdx#session-id",
    ),
    _r(
        "LIST-009",
        "SHOULD",
        "agent",
        "session/list refuses a cursor it did not hand out.",
        "session-list.mdx#pagination",
    ),
    _r(
        "PROMPT-004",
        "SHOULD",
        "agent",
        "A tool call that was granted permission is reported in_progress, then finished.",
        "prompt-turn.mdx#5-tool-invocation-and-status-reporting",
    ),
    _r(
        "CONTENT-002",
        "MUST",
        "agent",
        "resource_link blocks in prompts are accepted.",
        "content.mdx",
    ),
    _r(
        "CONTENT-003",
        "SHOULD",
        "agent",
        "Image, audio or embedded resource blocks the agent did not advertise are refused.",
        "content.mdx",
    ),
    _r(
        "CONTENT-004",
        "MUST",
        "agent",
        "Image, audio or embedded resource blocks the agent advertised are accepted.",
        "initialization.mdx#prompt-capabilities",
    ),
    _r(
        "TOOL-002",
        "SHOULD",
        "agent",
        "A tool_call_update names a tool call announced before.",
        "tool-calls.mdx#updating",
    ),
    _r(
        "TOOL-004",
        "MUST",
        "agent",
        "Within a session, each tool call has its own toolCallId.",
        "tool-calls.mdx#creating",
    ),
    _r(
        "TOOL-005",
        "MUST",
        "agent",
        "The options of one permission request have distinct optionIds.",
        "tool-calls.mdx#permission-options",
    ),
    _r(
        "TERM-004",
        "MUST",
        "agent",
        "Every terminal the agent creates is released.",
        "terminals.mdx#executing-commands",
    ),
    _r(
        "TERM-005",
        "MUST",
        "agent",
        "A killed terminal is still released.",
        "terminals.mdx#killing-commands",
    ),
    _r(
        "TERM-007",
        "MUST",
        "agent",
        "Terminal calls use only ids the client issued and that are not yet released.",
        "terminals.mdx#releasing-terminals",
    ),
    _r(
        "MODE-003",
        "SHOULD",
        "agent",
        "session/set_mode with a mode id that was not offered is refused.",
        "session-modes.mdx#from-the-client",
    ),
    _r(
        "CFG-014",
        "SHOULD",
        "agent",
        "An unknown config option or value is refused.",
        "session-config-options.mdx#from-the-client",
    ),
    _r(
        "EXT-002",
        "MUST",
        "both",
        "Spec-defined objects carry no fields of their own invention; extensions go in _meta.",
        "extensibility.mdx#the-_meta-field",
    ),
    _r(
        "EXT-008",
        "MUST",
        "both",
        "Unknown _meta content is tolerated (params, content blocks, capabilities).",
        "extensibility.mdx#the-_meta-field",
    ),
    _r(
        "RCANCEL-001",
        "MUST",
        "both",
        "A request cancelled with $/cancel_request still gets exactly one response.",
        "cancellation.mdx",
    ),
    _r(
        "SHUT-002",
        "SHOULD",
        "agent",
        "The agent exits soon after its stdin closes, even during a turn.",
        "transports.mdx#stdio",
    ),
    _r(
        "UNST-001",
        "SHOULD",
        "agent",
        "No compaction updates unless the client advertised session.compaction.",
        "draft/prompt-turn.mdx#session-compaction",
    ),
)

BY_ID: Mapping[str, Requirement] = {r.id: r for r in REQUIREMENTS}


def requirement(id: str) -> Requirement:
    """The rule with this id (``KeyError`` when acpwire does not list it)."""
    return BY_ID[id]
