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

The sentences paraphrase; the sources are the authority. :mod:`acpwire.testing.conformance`
cites these ids in every check, and a test proves each id here is checked by something and
that every ``spec`` id exists in the full requirement list.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "BY_ID",
    "REQUIREMENTS",
    "V2_REQUIREMENTS",
    "Level",
    "Origin",
    "Requirement",
    "Side",
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


def _r(id: str, level: Level, side: Side, text: str, source: str) -> Requirement:
    return Requirement(id, level, side, text, source)


def _sandbox(id: str, level: Level, text: str) -> Requirement:
    return Requirement(id, level, "client", text, "docs/security.md#the-client-sandbox", "security")


def _project(id: str, level: Level, text: str, source: str = "") -> Requirement:
    return Requirement(
        id, level, "client", text, source or "docs/check.md#checking-a-client", "project"
    )


def _v2(id: str, level: Level, text: str, page: str) -> Requirement:
    return Requirement(id, level, "agent", text, "docs/protocol/v2/draft/" + page, "draft")


_RFD = "RFD streamable-http-websocket-transport: "


def _rfd(id: str, level: Level, text: str, section: str) -> Requirement:
    return Requirement(id, level, "server", text, _RFD + section, "rfd")


def _dur(id: str, level: Level, text: str) -> Requirement:
    source = "RFD durable-resumable-http-transport (commit 3653fb47); docs/remote.md"
    return Requirement(id, level, "server", text, source, "rfd")


def _sec(id: str, level: Level, text: str, section: str) -> Requirement:
    return Requirement(id, level, "server", text, section, "security")


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
    Requirement(
        "JSONRPC-001",
        "MUST",
        "agent",
        "An error answer to input whose id could not be read (a parse error) has id null.",
        "JSON-RPC 2.0 sec. 5 (Response object: id)",
        "jsonrpc",
    ),
    _r(
        "RPC-013",
        "SHOULD",
        "agent",
        "The agent answers other requests while a prompt turn is running.",
        "prompt-turn.mdx; session-modes.mdx (at any point during a session)",
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
    Requirement(
        "VERSION-001",
        "SHOULD",
        "agent",
        "The v2 draft is answered only to a client that asked for version 2; a later "
        "version asked for gets the newest stable one.",
        "docs/protocol-currency.md#opting-in",
        "project",
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
    # the client side (acp check --client)
    _r(
        "TRANS-005",
        "MUST",
        "client",
        "The client writes only valid ACP messages to the agent's stdin.",
        "transports.mdx#stdio",
    ),
    _r(
        "INIT-001",
        "MUST",
        "client",
        "The client calls initialize before it creates any session.",
        "initialization.mdx",
    ),
    _r(
        "INIT-002",
        "SHOULD",
        "client",
        "The client names itself in initialize (clientInfo with name and version).",
        "initialization.mdx#implementation-information",
    ),
    _r(
        "INIT-006",
        "MUST",
        "both",
        "Both sides go on only with a protocol version they both speak.",
        "initialization.mdx#version-negotiation",
    ),
    _r(
        "INIT-007",
        "MUST",
        "client",
        "initialize carries the newest protocol version the client speaks, as an integer.",
        "initialization.mdx#version-negotiation",
    ),
    _r(
        "INIT-010",
        "SHOULD",
        "client",
        "Given a version it does not speak, the client closes the connection and tells the user.",
        "initialization.mdx#version-negotiation",
    ),
    _r(
        "INIT-013",
        "SHOULD",
        "client",
        "The client states its capabilities in initialize.",
        "initialization.mdx#client-capabilities",
    ),
    _r(
        "SESS-001",
        "MUST",
        "client",
        "The client creates sessions only once initialize has been answered.",
        "session-setup.mdx",
    ),
    _r(
        "SESS-004",
        "MUST",
        "client",
        "No session/load unless the agent advertised loadSession.",
        "session-setup.mdx#loading-sessions",
    ),
    _r(
        "SESS-009",
        "MUST",
        "client",
        "No session/resume unless the agent advertised sessionCapabilities.resume.",
        "session-setup.mdx#resuming-sessions",
    ),
    _r(
        "SESS-013",
        "MUST",
        "client",
        "No session/close unless the agent advertised sessionCapabilities.close.",
        "session-setup.mdx#closing-active-sessions",
    ),
    _r(
        "SESS-017",
        "MUST",
        "client",
        "additionalDirectories only when the agent advertised support for them.",
        "session-setup.mdx#additional-workspace-roots",
    ),
    _r(
        "SESS-019",
        "MUST",
        "both",
        "A session's cwd is an absolute path.",
        "session-setup.mdx#working-directory",
    ),
    _r(
        "SESS-026",
        "MUST",
        "client",
        "HTTP or SSE MCP servers only when the agent advertised that transport.",
        "session-setup.mdx#mcp-servers",
    ),
    _r(
        "LIST-003",
        "MUST",
        "client",
        "No session/list unless the agent advertised sessionCapabilities.list.",
        "session-list.mdx",
    ),
    _r(
        "DEL-003",
        "MUST",
        "client",
        "No session/delete unless the agent advertised sessionCapabilities.delete.",
        "session-delete.mdx",
    ),
    _r(
        "AUTH-001",
        "MUST",
        "client",
        "No logout unless the agent advertised auth.logout.",
        "authentication.mdx",
    ),
    _r(
        "PROMPT-001",
        "MUST",
        "client",
        "The client prompts only once initialize and session/new have been answered.",
        "prompt-turn.mdx",
    ),
    _r(
        "PROMPT-002",
        "MUST",
        "client",
        "Prompt content is limited to what the agent's promptCapabilities allow.",
        "prompt-turn.mdx#1-user-message",
    ),
    _r(
        "TOOL-003",
        "MUST",
        "client",
        "A permission request of a cancelled turn is answered with the cancelled outcome.",
        "tool-calls.mdx#requesting-permission",
    ),
    _r(
        "CANCEL-002",
        "MUST",
        "client",
        "After session/cancel the client answers the turn's pending permission requests cancelled.",
        "prompt-turn.mdx#cancellation",
    ),
    _r(
        "CANCEL-007",
        "SHOULD",
        "client",
        "The client keeps taking tool call updates after it sent session/cancel.",
        "prompt-turn.mdx#cancellation",
    ),
    _r(
        "FS-003",
        "MUST",
        "client",
        "fs/write_text_file creates the file when it does not exist.",
        "file-system.mdx#writing-files",
    ),
    _r(
        "TERM-003",
        "MUST",
        "client",
        "Terminal output is truncated only at character boundaries.",
        "terminals.mdx#executing-commands",
    ),
    # what acpwire expects of a client's sandbox where the spec is silent (docs/security.md)
    _sandbox(
        "SANDBOX-001",
        "MUST",
        "Reads and writes through `..` that lead out of the session's roots are refused.",
    ),
    _sandbox(
        "SANDBOX-002",
        "MUST",
        "Reads and writes of absolute paths outside the session's roots are refused.",
    ),
    _sandbox(
        "SANDBOX-003",
        "MUST",
        "Reads and writes through a symbolic link inside the roots that leads out are refused.",
    ),
    _sandbox(
        "SANDBOX-004",
        "SHOULD",
        "A relative path is refused, not resolved against the client's own working directory.",
    ),
    _sandbox(
        "SANDBOX-005",
        "SHOULD",
        "A terminal whose cwd lies outside the session's roots is refused.",
    ),
    _sandbox(
        "SANDBOX-006",
        "SHOULD",
        "Terminals get an allow-listed environment: the client's secrets do not reach them.",
    ),
    _sandbox(
        "SANDBOX-007",
        "SHOULD",
        "Writes into version control internals (.git/ and the like) are refused.",
    ),
    # acpwire's rules for clients: tolerant in what they accept, never hang
    _project(
        "CLIENT-001",
        "MUST",
        "Lines that are not JSON-RPC messages (not JSON, not UTF-8, not objects) neither stop "
        "the client nor end the turn.",
    ),
    _project(
        "CLIENT-002",
        "MUST",
        "Updates out of the usual order or of unknown kinds, sessions or tool calls neither "
        "stop the client nor end the turn.",
    ),
    _project(
        "CLIENT-003",
        "MUST",
        "A line longer than the client reads is dropped (or read), and the turn goes on.",
    ),
    _project(
        "CLIENT-004",
        "SHOULD",
        "A message of tens of megabytes is read and the turn completes.",
    ),
    _project(
        "CLIENT-005",
        "MUST",
        "When the agent exits, the client notices within seconds, even while another process "
        "holds the agent's stdout, and ends the turn with an error.",
    ),
    _project(
        "CLIENT-006",
        "MUST",
        "Floods of output (the agent's stderr, a terminal's output) never block the client.",
    ),
    _project(
        "CLIENT-007",
        "SHOULD",
        "The client waits a few seconds for initialize rather than giving up.",
    ),
    _project(
        "CLIENT-008",
        "SHOULD",
        "An error answer is shown to the user and ends the run with a failure status.",
    ),
    _project(
        "CLIENT-009",
        "MUST",
        "A terminal keeps at most outputByteLimit bytes, the newest, and says it truncated.",
        "terminals.mdx#executing-commands (stated without a keyword)",
    ),
    _project(
        "CLIENT-010",
        "SHOULD",
        "A read of a file that does not exist is answered with an error, not with content.",
    ),
    _project(
        "CLIENT-011",
        "SHOULD",
        "Terminals the agent never released are stopped when the client ends, with the "
        "processes their commands started.",
    ),
    _project(
        "CLIENT-012",
        "SHOULD",
        "Terminal calls naming a terminal the client does not have are answered with an error.",
    ),
    _project(
        "CLIENT-014",
        "SHOULD",
        "terminal/kill stops the command together with the processes it started.",
        "terminals.mdx#killing-commands",
    ),
    _project(
        "CLIENT-013",
        "MUST",
        "Updates for a session that come before its session/new answer are kept, not dropped.",
    ),
    # The remote endpoint: the RFD's Streamable HTTP profile
    _rfd(
        "RFD-HTTP-001",
        "MUST",
        "POST initialize without Acp-Connection-Id is answered 200 with the JSON-RPC response "
        "as a JSON body and the new Acp-Connection-Id in a header.",
        "Unified Endpoint Routing; Streamable HTTP Message Flow",
    ),
    _rfd(
        "RFD-HTTP-002",
        "MUST",
        "Every other POST (request, notification or response) is answered 202 Accepted at "
        "once, with an empty body.",
        "1. Adds an HTTP Transport; 6. Defines a unified routing model",
    ),
    _rfd(
        "RFD-HTTP-003",
        "MUST",
        "GET with Accept: text/event-stream and a known Acp-Connection-Id opens an SSE stream.",
        "6. Defines a unified routing model; Unified Endpoint Routing",
    ),
    _rfd(
        "RFD-HTTP-004",
        "MUST",
        "The connection's one GET stream carries every server-to-client message: answers, "
        "notifications and agent requests of all its sessions.",
        "1. Adds an HTTP Transport; Connection and Session Model",
    ),
    _rfd(
        "RFD-HTTP-005",
        "MUST",
        "A POST whose Content-Type is not application/json is answered 415.",
        "Content Negotiation and Validation",
    ),
    _rfd(
        "RFD-HTTP-006",
        "MUST",
        "A GET whose Accept does not include text/event-stream is answered 406.",
        "Content Negotiation and Validation",
    ),
    _rfd(
        "RFD-HTTP-007",
        "MUST",
        "A POST other than initialize, a GET or a DELETE without Acp-Connection-Id is "
        "answered 400.",
        "Unified Endpoint Routing",
    ),
    _rfd(
        "RFD-HTTP-008",
        "MUST",
        "A POST or GET naming an unknown Acp-Connection-Id is answered 404.",
        "Unified Endpoint Routing",
    ),
    _rfd(
        "RFD-HTTP-009",
        "MUST",
        "A session-scoped POST without Acp-Session-Id is answered 400.",
        "Unified Endpoint Routing; Content Negotiation and Validation",
    ),
    _rfd(
        "RFD-HTTP-010",
        "MUST",
        "A batch (a JSON array of messages) is answered 501.",
        "Content Negotiation and Validation",
    ),
    _rfd(
        "RFD-HTTP-011",
        "MUST",
        "DELETE ends the connection: 202, its GET stream closes, and its id is unknown afterwards.",
        "Unified Endpoint Routing; Connection Termination",
    ),
    _rfd(
        "RFD-HTTP-012",
        "MUST",
        "Streamable HTTP is served over HTTP/2 (h2c with prior knowledge, or h2 by ALPN on TLS).",
        "1. Adds an HTTP Transport; Content Negotiation and Validation",
    ),
    _rfd(
        "RFD-HTTP-013",
        "SHOULD",
        "Cookies the server sets are ones a client returns on its later requests to the endpoint.",
        "5. Requires cookie support on HTTP transports",
    ),
    _rfd(
        "RFD-HTTP-014",
        "SHOULD",
        "When SSE events carry ids, a stream reopened with Last-Event-ID goes on after that "
        "event: nothing lost, nothing repeated.",
        "Comparing to MCP Streamable HTTP (resumability: future work)",
    ),
    # The remote endpoint: the RFD's WebSocket profile
    _rfd(
        "RFD-WS-001",
        "MUST",
        "GET with Upgrade: websocket on the same endpoint is upgraded (101), with "
        "Acp-Connection-Id in the 101 headers.",
        "4. Adds WebSocket as a first-class upgrade; WebSocket Request Flow",
    ),
    _rfd(
        "RFD-WS-002",
        "MUST",
        "Over WebSocket every JSON-RPC message is one text frame, initialize first.",
        "WebSocket Request Flow: Bidirectional Messaging",
    ),
    _rfd(
        "RFD-WS-003",
        "MUST",
        "Binary WebSocket frames are ignored: not answered, and the connection stays open.",
        "WebSocket Request Flow: Bidirectional Messaging",
    ),
    # The remote endpoint: the durable transport draft (resume by cursor)
    _dur(
        "RFD-DUR-001",
        "MUST",
        "An endpoint that advertises transport.resumable puts an opaque cursor on every "
        'message of a stream, the same as the SSE id and as _meta["acp/cursor"].',
    ),
    _dur(
        "RFD-DUR-002",
        "MUST",
        "A stream resumed from a cursor replays what followed it as it was first sent: the "
        "same messages with their original cursors.",
    ),
    _dur(
        "RFD-DUR-003",
        "MUST",
        "A resume the endpoint cannot serve (an unknown cursor) is refused with 409 and a "
        "reason, never answered with a live stream.",
    ),
    # The remote endpoint: what acpwire expects of any endpoint that runs an agent for others
    _sec(
        "SEC-001",
        "MUST",
        "Without credentials, POST initialize and the WebSocket upgrade are refused with 401.",
        "docs/security.md#authentication",
    ),
    _sec(
        "SEC-002",
        "MUST",
        "A wrong bearer token is refused like a missing one (401), the WebSocket upgrade included.",
        "docs/security.md#authentication",
    ),
    _sec(
        "SEC-003",
        "MUST",
        "A 401 answer carries WWW-Authenticate naming the scheme to use.",
        "docs/security.md#authentication; RFC 9110 section 15.5.2",
    ),
    _sec(
        "SEC-004",
        "MUST",
        "A request with an Origin that is not allowed is refused (403), the WebSocket upgrade "
        "included, even with valid credentials.",
        "docs/security.md#origin-and-host-browsers-and-dns-rebinding",
    ),
    _sec(
        "SEC-005",
        "MUST",
        "An endpoint on a loopback address refuses a Host that is not a loopback name (DNS "
        "rebinding), on the WebSocket upgrade too.",
        "docs/security.md#origin-and-host-browsers-and-dns-rebinding",
    ),
    _sec(
        "SEC-006",
        "MUST",
        "Another principal's connection id is unknown (404 for POST, GET and DELETE), and the "
        "connection goes on.",
        "docs/security.md#isolation-between-principals",
    ),
    _sec(
        "SEC-007",
        "MUST",
        "Another principal cannot list, load, resume or prompt a session: it is not listed and "
        "those requests fail.",
        "docs/security.md#isolation-between-principals",
    ),
    _sec(
        "SEC-008",
        "SHOULD",
        "The principal that owns a session can attach it from another connection.",
        "docs/security.md#isolation-between-principals",
    ),
    _sec(
        "SEC-009",
        "MUST",
        "Connection ids are all different and unguessable: at least 128 bits by length and "
        "alphabet.",
        "docs/security.md#isolation-between-principals",
    ),
    _sec(
        "SEC-010",
        "SHOULD",
        "A POST declaring a body above the endpoint's message limit is refused with 413 "
        "before the body is sent.",
        "docs/security.md#bounded-resources",
    ),
    Requirement(
        "SSE-001",
        "SHOULD",
        "server",
        "An idle SSE stream sends a comment or an event at least every 15 s or so, so that "
        "proxies keep it open.",
        "HTML Standard, server-sent events: authoring notes; docs/remote.md (liveness)",
        "web",
    ),
)

V2_REQUIREMENTS: tuple[Requirement, ...] = (
    _v2(
        "V2-INIT-001",
        "MUST",
        "Asked for version 2, an agent that serves the v2 draft answers 2 with its info.",
        "initialization.mdx",
    ),
    _v2(
        "V2-PROMPT-001",
        "MUST",
        "The agent answers session/prompt once it accepted the prompt, before the turn ends.",
        "prompt-lifecycle.mdx",
    ),
    _v2(
        "V2-PROMPT-002",
        "MUST",
        "After accepting a prompt the agent reports the inserted user message with its messageId.",
        "prompt-lifecycle.mdx",
    ),
    _v2(
        "V2-PROMPT-003",
        "MUST",
        "When foreground work starts, the agent reports a running state_update.",
        "prompt-lifecycle.mdx",
    ),
    _v2(
        "V2-PROMPT-004",
        "MUST",
        "When the work ends, the agent reports an idle state_update with the stop reason.",
        "prompt-lifecycle.mdx",
    ),
    _v2(
        "V2-MSG-001",
        "MUST",
        "Message updates and message chunks carry an opaque messageId.",
        "prompt-lifecycle.mdx",
    ),
    _v2(
        "V2-CANCEL-001",
        "MUST",
        "After session/cancel the agent ends the work with an idle state whose reason is cancelled.",
        "cancellation.mdx",
    ),
    _v2(
        "V2-SCHEMA-001",
        "MUST",
        "Every message the agent sends on a v2 connection is valid against the v2 schema.",
        "schema.mdx",
    ),
)
"""The v2 draft's rules, kept apart: ``acp check`` tests them only with ``--protocol 2``."""

BY_ID: Mapping[str, Requirement] = {r.id: r for r in (*REQUIREMENTS, *V2_REQUIREMENTS)}


def requirement(id: str) -> Requirement:
    """The rule with this id (``KeyError`` when acpwire does not list it)."""
    return BY_ID[id]
