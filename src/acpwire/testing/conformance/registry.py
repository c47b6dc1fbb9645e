"""Every check ``acp check`` knows: its key, the requirement ids it tests, what it needs.

A check belongs to a *target kind*: ``agent`` (a program that speaks ACP, on stdio or
behind an endpoint), ``client`` (a command that starts an agent, played by the checker's
scripted agent; see :mod:`.client_scenarios`) or ``endpoint`` (a remote ``/acp`` endpoint
after the Streamable HTTP and WebSocket RFD, and the security rules of docs/security.md).
It also belongs to a *stage*, the part of a run that gives its verdict. For agents and
clients:

``probe``     own short-lived agent processes (version negotiation, exit on end of input);
``main``      the main conversation, with a client that advertises no optional capability
              and rejects every permission request;
``full``      a second conversation with every client capability, permissions granted;
``scenario``  (clients) one run of the client against one script of the scripted agent;
``wire``      the recording of all of them, read afterwards.

For endpoints: ``http`` (the Streamable HTTP profile), ``websocket`` (the WebSocket
profile) and ``security`` (who may reach the agent, and who may see what).

A check's level is the strongest level among its requirements, but a failure states
which of them it broke, and the failure's level follows those (a check citing a MUST
and a SHOULD rule fails at SHOULD level when only the SHOULD rule was broken).
``needs`` names what the check needs from the target or the command line; without it
the check is ``n/a`` (a feature the agent does not offer) or ``skip`` (an option not given).
:func:`select_checks` turns ``--only`` tokens (check keys or requirement ids) into keys.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..requirements import BY_ID, Level

__all__ = [
    "CHECKS",
    "CHECKS_BY_KEY",
    "NEEDS",
    "CheckSpec",
    "Stage",
    "Status",
    "TARGETS",
    "Target",
    "checks_for",
    "strongest",
    "select_checks",
]

Status = Literal["pass", "fail", "skip", "n/a"]
Target = Literal["agent", "client", "endpoint", "agent-v2"]
"""What a check is run against (``agent-v2``: an agent over the v2 draft, ``--protocol 2``)."""
TARGETS: tuple[Target, ...] = ("agent", "client", "endpoint", "agent-v2")
Stage = Literal["probe", "main", "full", "wire", "scenario", "http", "websocket", "security", "v2"]

NEEDS: Mapping[str, str] = {
    "session": "session/new succeeds (after --auth-method if the agent needs authentication)",
    "turn": "a prompt (--prompt) that ends normally",
    "slow-prompt": "--slow-prompt: a prompt that keeps the agent busy until cancelled",
    "tool-prompt": "--tool-prompt: a prompt that makes the agent use tools",
    "loadSession": "the agent advertises loadSession",
    "list": "the agent advertises sessionCapabilities.list",
    "modes": "session/new offers modes",
    "config": "session/new offers config options",
    "promptCapabilities": "the agent advertises at least one prompt capability",
    "client-prompt": "the client sends a prompt by itself ({prompt}, --client-prompt)",
    "client-workspace": "the session's cwd is the checker's folder (the client's working "
    "directory, or {cwd})",
    "client-fs-read": "the client advertises fs.readTextFile",
    "client-fs-write": "the client advertises fs.writeTextFile",
    "client-terminal": "the client advertises terminal",
    "client-cancel": "the client sends session/cancel when interrupted (SIGINT during a turn)",
    "attach": "the agent advertises loadSession or sessionCapabilities.resume",
    "token": "a bearer token (--token, ACP_TOKEN or an Authorization: Bearer --header)",
    "token2": "--token2: the token of a second principal",
    "loopback": "the URL names a loopback address (127.0.0.1, ::1, localhost)",
    "cookies": "the endpoint sets cookies",
    "event-ids": "the endpoint's SSE events carry ids",
    "resumable": "the endpoint advertises transport.resumable (the durable transport draft)",
}
"""What a check may need, by the short name used in :attr:`CheckSpec.needs` and the docs."""


def strongest(ids: Sequence[str]) -> Level:
    """MUST if any of the requirements ``ids`` is a MUST, else SHOULD."""
    return "MUST" if any(BY_ID[i].level == "MUST" for i in ids) else "SHOULD"


@dataclass(frozen=True, slots=True)
class CheckSpec:
    """One check: a stable ``key`` (usable with ``--only``), a title and the rules it tests."""

    key: str
    title: str
    ids: tuple[str, ...]
    stage: Stage
    needs: tuple[str, ...] = ()
    target: Target = "agent"

    @property
    def level(self) -> Level:
        return strongest(self.ids)


def _c(key: str, title: str, ids: tuple[str, ...], stage: Stage, *needs: str) -> CheckSpec:
    return CheckSpec(key, title, ids, stage, tuple(needs))


def _k(key: str, title: str, ids: tuple[str, ...], stage: Stage, *needs: str) -> CheckSpec:
    return CheckSpec(key, title, ids, stage, tuple(needs), "client")


def _e(key: str, title: str, ids: tuple[str, ...], stage: Stage, *needs: str) -> CheckSpec:
    return CheckSpec(key, title, ids, stage, tuple(needs), "endpoint")


_V1_CHECKS: tuple[CheckSpec, ...] = (
    # version negotiation and end of input, in processes of their own
    _c("version-newer", "asked for version 2, the agent answers 1 or 2", ("INIT-009",), "probe"),
    _c(
        "version-unknown",
        "asked for version 65535, the agent answers the newest version it supports",
        ("INIT-009",),
        "probe",
    ),
    _c(
        "version-draft",
        "asked for version 65535, the agent does not answer in the v2 draft's shape",
        ("VERSION-001",),
        "probe",
    ),
    _c(
        "shutdown",
        "the agent exits when its stdin closes (after initialize, and with sessions open)",
        ("SHUT-001",),
        "probe",
    ),
    _c(
        "shutdown-turn",
        "the agent exits when its stdin closes during a turn",
        ("SHUT-002",),
        "full",
        "slow-prompt",
    ),
    # initialize
    _c(
        "initialize", "initialize answers the requested version 1", ("INIT-003", "INIT-008"), "main"
    ),
    _c("agent-info", "initialize names the agent (agentInfo)", ("INIT-005",), "main"),
    _c(
        "auth-methods",
        "no terminal auth methods for a client that did not advertise auth.terminal",
        ("AUTH-002",),
        "main",
    ),
    # JSON-RPC behaviour
    _c("unknown-method", "an unknown method is answered -32601", ("RPC-006",), "main"),
    _c("ext-request", "an unknown _ request is answered", ("EXT-003",), "main"),
    _c("ext-request-code", "an unknown _ request is answered -32601", ("EXT-004",), "main"),
    _c("string-ids", "a string request id comes back as the same string", ("RPC-003",), "main"),
    _c("ext-notification", "an unknown _ notification is ignored", ("EXT-006",), "main"),
    _c("protocol-notification", "an unknown $/ notification is ignored", ("RCANCEL-003",), "main"),
    _c("malformed-line", "the agent survives a line that is not JSON", ("RPC-009",), "main"),
    _c(
        "malformed-line-error",
        "a line that is not JSON is answered -32700 with id null, or not at all",
        ("JSONRPC-001", "RPC-010"),
        "main",
    ),
    _c(
        "invalid-params",
        "params of the wrong shape are answered with an error",
        ("RPC-007",),
        "main",
    ),
    _c(
        "invalid-params-code", "params of the wrong shape are answered -32602", ("RPC-008",), "main"
    ),
    _c(
        "cancel-request",
        "a request cancelled with $/cancel_request still gets exactly one answer",
        ("RCANCEL-001",),
        "main",
    ),
    # sessions
    _c("session-new", "session/new with an absolute cwd and no MCP servers", ("INIT-015",), "main"),
    _c("session-unique", "two sessions get two different ids", ("SESS-002",), "main", "session"),
    _c("relative-cwd", "session/new with a relative cwd is refused", ("SESS-028",), "main"),
    _c(
        "unknown-session",
        "a prompt for an unknown sessionId is answered with an error",
        ("SESS-029",),
        "main",
    ),
    # prompt turns
    _c(
        "prompt",
        "a prompt ends with a result carrying a valid stopReason",
        ("PROMPT-003", "PROMPT-005"),
        "main",
        "session",
    ),
    _c(
        "turn-order",
        "no turn content arrives after the turn's response (watched for 0.5 s)",
        ("PROMPT-003",),
        "main",
        "turn",
    ),
    _c("second-prompt", "a session takes a second prompt", ("PROMPT-007",), "main", "turn"),
    _c(
        "resource-link",
        "a prompt with a resource_link block is accepted",
        ("INIT-014", "CONTENT-002"),
        "main",
        "turn",
    ),
    _c(
        "meta-accepted",
        "_meta in initialize capabilities, prompt params and content blocks is accepted",
        ("EXT-008",),
        "main",
        "turn",
    ),
    _c(
        "prompt-capabilities",
        "image, audio or embedded resources not advertised are refused",
        ("CONTENT-003",),
        "main",
        "turn",
    ),
    _c(
        "prompt-content",
        "image, audio or embedded resources advertised are accepted",
        ("CONTENT-004",),
        "main",
        "turn",
        "promptCapabilities",
    ),
    _c(
        "cancel",
        "session/cancel ends the turn with a cancelled result, its updates before it",
        ("CANCEL-004", "CANCEL-005", "CANCEL-006"),
        "main",
        "slow-prompt",
    ),
    _c(
        "cancel-prompt",
        "a cancelled turn ends within a few seconds",
        ("CANCEL-003",),
        "main",
        "slow-prompt",
    ),
    _c(
        "request-during-turn",
        "a request sent while a turn runs is answered before the turn ends",
        ("RPC-013",),
        "main",
        "slow-prompt",
    ),
    _c(
        "after-cancel",
        "the session takes a prompt after a cancelled turn",
        ("CANCEL-008",),
        "main",
        "slow-prompt",
    ),
    # modes and config options
    _c("mode-state", "currentModeId is one of the offered modes", ("MODE-004",), "main", "modes"),
    _c(
        "set-mode", "session/set_mode with an offered mode succeeds", ("MODE-002",), "main", "modes"
    ),
    _c(
        "unknown-mode",
        "session/set_mode with an unknown mode is refused",
        ("MODE-003",),
        "main",
        "modes",
    ),
    _c(
        "config-options",
        "a select option's current value is one of its values",
        ("CFG-010",),
        "main",
        "config",
    ),
    _c(
        "set-config-option",
        "session/set_config_option returns the complete list, the value changed",
        ("CFG-012",),
        "main",
        "config",
    ),
    _c(
        "unknown-config",
        "an unknown config option or value is refused",
        ("CFG-014",),
        "main",
        "config",
    ),
    # optional session methods
    _c(
        "session-load",
        "session/load replays the history before responding",
        ("SESS-006", "SESS-007"),
        "main",
        "loadSession",
        "turn",
    ),
    _c(
        "session-list",
        "session/list answers a sessions array, filters by cwd, lists a prompted session",
        ("LIST-004", "LIST-005", "LIST-011"),
        "main",
        "list",
    ),
    _c("list-cursor", "session/list refuses an invalid cursor", ("LIST-009",), "main", "list"),
    _c(
        "unadvertised-methods",
        "optional methods not advertised are answered with errors",
        ("SESS-030",),
        "main",
    ),
    # the full-capabilities run
    _c(
        "mcp-servers",
        "session/new with a stdio MCP server is accepted",
        ("SESS-024",),
        "full",
    ),
    _c(
        "mcp-connect",
        "the agent connects to the MCP server it was given",
        ("SESS-027",),
        "full",
        "session",
    ),
    _c(
        "tool-progress",
        "a tool call whose permission was granted is reported in_progress",
        ("PROMPT-004",),
        "full",
        "tool-prompt",
    ),
    _c(
        "absolute-paths",
        "paths in fs calls, terminals and tool-call locations are absolute",
        ("OVR-001",),
        "wire",
    ),
    _c("fs-roots", "fs calls stay inside the session's folder", ("SESS-023",), "wire"),
    _c(
        "terminals-released",
        "every terminal created is released, killed ones too",
        ("TERM-004", "TERM-005"),
        "wire",
    ),
    _c(
        "terminal-ids",
        "terminal calls use only ids the client issued and not yet released",
        ("TERM-007",),
        "wire",
    ),
    # the recording
    _c(
        "stdout-clean",
        "stdout carries only UTF-8 JSON messages, one per line",
        ("TRANS-001", "TRANS-003", "TRANS-004"),
        "wire",
    ),
    _c("envelope", "every message is a JSON-RPC 2.0 object", ("RPC-011",), "wire"),
    _c("schema", "every payload matches the ACP v1 schema", ("SCHEMA-001",), "wire"),
    _c("capabilities", "agentCapabilities has the documented shape", ("INIT-017",), "wire"),
    _c("custom-fields", "no fields the schema does not define outside _meta", ("EXT-002",), "wire"),
    _c(
        "responses",
        "every request gets exactly one well-formed response with its id",
        ("RPC-001", "RPC-003", "RPC-005"),
        "wire",
    ),
    _c("notification-unanswered", "notifications get no response", ("RPC-002",), "wire"),
    _c(
        "agent-request-ids",
        "the agent's own requests have unique, non-null integer or string ids",
        ("RPC-004", "RPC-012"),
        "wire",
    ),
    _c("update-sessions", "session/update names only known sessions", ("PROMPT-006",), "wire"),
    _c(
        "capability-gates",
        "no fs/terminal/elicitation calls, boolean options or compaction updates not advertised",
        ("FS-002", "TERM-002", "ELIC-005", "CFG-003", "UNST-001"),
        "wire",
    ),
    _c("tool-call-ids", "a toolCallId is used by one tool call per session", ("TOOL-004",), "wire"),
    _c(
        "tool-call-updates",
        "tool_call_update names a tool call announced before",
        ("TOOL-002",),
        "wire",
    ),
    _c(
        "permission-options",
        "the options of a permission request have distinct ids",
        ("TOOL-005",),
        "wire",
    ),
    _c("line-numbers", "line numbers are 1-based", ("OVR-002",), "wire"),
    # clients: the handshake and the JSON-RPC manners, in scenarios of their own
    _k(
        "client-initialize",
        "initialize asks for an integer protocol version and states the client's capabilities",
        ("INIT-007", "INIT-013"),
        "scenario",
    ),
    _k("client-info", "initialize names the client (clientInfo)", ("INIT-002",), "scenario"),
    _k(
        "client-ext-request",
        "an unknown _ request from the agent is answered",
        ("EXT-003",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "client-ext-request-code",
        "an unknown _ request from the agent is answered -32601",
        ("EXT-004",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "client-unknown-request",
        "a request for a method the client does not have is answered",
        ("RPC-005",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "client-ext-notification",
        "an unknown _ notification is ignored",
        ("EXT-006",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "client-protocol-notification",
        "an unknown $/ notification is ignored",
        ("RCANCEL-003",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "client-string-ids",
        "a request with a string id is answered with the same string",
        ("RPC-003",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "client-cancel-request",
        "a request cancelled with $/cancel_request still gets exactly one answer",
        ("RCANCEL-001",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "client-meta",
        "_meta on updates, content, tool calls and requests is accepted",
        ("EXT-008",),
        "scenario",
        "client-prompt",
    ),
    # clients: hostile agents
    _k(
        "garbage-lines",
        "lines that are not JSON, not UTF-8 or not objects do not end the turn",
        ("CLIENT-001",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "oversize-line",
        "a line of 40 MB does not end the turn",
        ("CLIENT-003",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "huge-message",
        "a 20 MB permission request is read and answered, and the turn completes",
        ("CLIENT-004",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "unknown-updates",
        "updates of unknown kinds, sessions, content and tool calls do not end the turn",
        ("CLIENT-002",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "odd-order",
        "updates before session/new's answer and a tool call's update before the call are taken",
        ("CLIENT-002",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "early-updates",
        "a message chunk sent before session/new's answer is shown like the later ones",
        ("CLIENT-013",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "late-updates",
        "updates after the turn's answer do not upset the client",
        ("CLIENT-002",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "stderr-flood",
        "10 MB on the agent's stderr do not block the agent or the client",
        ("CLIENT-006",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "slow-initialize",
        "an initialize answered after 3 s is waited for",
        ("CLIENT-007",),
        "scenario",
    ),
    _k(
        "unsupported-version",
        "an agent answering a version the client does not speak gets no session; the client "
        "closes and says why",
        ("INIT-006", "INIT-010"),
        "scenario",
    ),
    _k(
        "prompt-error",
        "an error answer to session/prompt is shown and the run fails",
        ("CLIENT-008",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "session-new-error",
        "an error answer to session/new is shown and the run fails",
        ("CLIENT-008",),
        "scenario",
    ),
    _k(
        "agent-exit",
        "the agent exiting during a turn ends the client's run with an error within seconds",
        ("CLIENT-005",),
        "scenario",
        "client-prompt",
    ),
    _k(
        "agent-exit-grandchild",
        "the same while a grandchild process holds the agent's stdout open",
        ("CLIENT-005",),
        "scenario",
        "client-prompt",
    ),
    # clients: files
    _k(
        "fs-write-creates",
        "fs/write_text_file creates a missing file with the content sent",
        ("FS-003",),
        "scenario",
        "client-prompt",
        "client-workspace",
        "client-fs-write",
    ),
    _k(
        "fs-read-lines",
        "fs/read_text_file with line 2 and limit 2 returns lines 2 and 3",
        ("OVR-002",),
        "scenario",
        "client-prompt",
        "client-workspace",
        "client-fs-read",
    ),
    _k(
        "fs-missing",
        "a read of a missing file is answered with an error",
        ("CLIENT-010",),
        "scenario",
        "client-prompt",
        "client-workspace",
        "client-fs-read",
    ),
    _k(
        "fs-relative",
        "a relative path is refused",
        ("SANDBOX-004",),
        "scenario",
        "client-prompt",
        "client-workspace",
        "client-fs-read",
    ),
    _k(
        "fs-dotdot",
        "paths with .. leading out of the session's folder are refused, read and write",
        ("SANDBOX-001",),
        "scenario",
        "client-prompt",
        "client-workspace",
        "client-fs-read",
    ),
    _k(
        "fs-absolute-outside",
        "absolute paths outside the session's folder are refused, read and write",
        ("SANDBOX-002",),
        "scenario",
        "client-prompt",
        "client-workspace",
        "client-fs-read",
    ),
    _k(
        "fs-symlink-out",
        "symbolic links from inside the folder to the outside are refused, read and write",
        ("SANDBOX-003",),
        "scenario",
        "client-prompt",
        "client-workspace",
        "client-fs-read",
    ),
    _k(
        "fs-vcs-internals",
        "a write into .git/ is refused",
        ("SANDBOX-007",),
        "scenario",
        "client-prompt",
        "client-workspace",
        "client-fs-write",
    ),
    # clients: terminals
    _k(
        "terminal-output-limit",
        "outputByteLimit keeps the newest output, cut at a character boundary, truncated: true",
        ("TERM-003", "CLIENT-009"),
        "scenario",
        "client-prompt",
        "client-terminal",
    ),
    _k(
        "terminal-flood",
        "a terminal printing 30 MB is served: its exit and output are answered",
        ("CLIENT-006",),
        "scenario",
        "client-prompt",
        "client-terminal",
    ),
    _k(
        "terminal-unknown-id",
        "terminal calls naming an unknown terminal are answered with an error",
        ("CLIENT-012",),
        "scenario",
        "client-prompt",
        "client-terminal",
    ),
    _k(
        "terminal-kill",
        "terminal/kill stops the command and the process it started (its process group)",
        ("CLIENT-014",),
        "scenario",
        "client-prompt",
        "client-terminal",
    ),
    _k(
        "terminal-orphan",
        "a terminal never released is stopped when the client ends, its command's child too",
        ("CLIENT-011",),
        "scenario",
        "client-prompt",
        "client-terminal",
    ),
    _k(
        "terminal-cwd-outside",
        "a terminal with a cwd outside the session's folder is refused",
        ("SANDBOX-005",),
        "scenario",
        "client-prompt",
        "client-workspace",
        "client-terminal",
    ),
    _k(
        "terminal-env",
        "a secret in the client's environment does not reach a terminal",
        ("SANDBOX-006",),
        "scenario",
        "client-prompt",
        "client-terminal",
    ),
    # clients: permission and cancellation
    _k(
        "permission-cancel",
        "once the client cancelled the turn, permission requests are answered cancelled",
        ("TOOL-003", "CANCEL-002"),
        "scenario",
        "client-prompt",
        "client-cancel",
    ),
    _k(
        "updates-after-cancel",
        "tool call updates after session/cancel are taken",
        ("CANCEL-007",),
        "scenario",
        "client-prompt",
        "client-cancel",
    ),
    # clients: the recording of every scenario
    _k(
        "client-stdin-clean",
        "the agent's stdin gets only UTF-8 JSON, one message per line",
        ("TRANS-001", "TRANS-003"),
        "wire",
    ),
    _k("client-envelope", "every message is a JSON-RPC 2.0 object", ("RPC-011",), "wire"),
    _k("client-schema", "every payload matches the ACP v1 schema", ("TRANS-005",), "wire"),
    _k(
        "client-custom-fields",
        "no fields the schema does not define outside _meta",
        ("EXT-002",),
        "wire",
    ),
    _k(
        "client-responses",
        "every request of the agent gets exactly one well-formed response with its id",
        ("RPC-001", "RPC-003", "RPC-005"),
        "wire",
    ),
    _k("client-notifications", "notifications get no response", ("RPC-002",), "wire"),
    _k(
        "client-request-ids",
        "the client's requests have non-null integer or string ids",
        ("RPC-004",),
        "wire",
    ),
    _k(
        "client-order",
        "initialize first, session/new after its answer, session/prompt after session/new's",
        ("INIT-001", "SESS-001", "PROMPT-001"),
        "wire",
    ),
    _k(
        "client-gates",
        "no load, resume, close, list, delete, logout, extra roots or HTTP MCP not advertised",
        (
            "SESS-004",
            "SESS-009",
            "SESS-013",
            "SESS-017",
            "SESS-026",
            "LIST-003",
            "DEL-003",
            "AUTH-001",
        ),
        "wire",
    ),
    _k(
        "client-prompt-content",
        "prompts carry only text and resource links when no prompt capability is advertised",
        ("PROMPT-002",),
        "wire",
    ),
    _k(
        "client-paths",
        "session/new's cwd is an absolute path",
        ("SESS-019", "OVR-001"),
        "wire",
    ),
    # endpoints: the Streamable HTTP profile
    _e(
        "http-initialize",
        "POST initialize is answered 200 with its JSON-RPC response and Acp-Connection-Id",
        ("RFD-HTTP-001",),
        "http",
    ),
    _e(
        "http-accepted",
        "other POSTs (request, notification, response) are answered 202 with no body",
        ("RFD-HTTP-002",),
        "http",
    ),
    _e("http-stream", "GET with Acp-Connection-Id opens an SSE stream", ("RFD-HTTP-003",), "http"),
    _e(
        "http-routing",
        "session/new's answer, a turn's updates and its answer come on the one GET stream",
        ("RFD-HTTP-004",),
        "http",
        "turn",
    ),
    _e(
        "http-content-type",
        "a POST that is not application/json gets 415",
        ("RFD-HTTP-005",),
        "http",
    ),
    _e("http-accept", "a GET not accepting text/event-stream gets 406", ("RFD-HTTP-006",), "http"),
    _e(
        "http-missing-connection",
        "POST, GET and DELETE without Acp-Connection-Id get 400",
        ("RFD-HTTP-007",),
        "http",
    ),
    _e(
        "http-unknown-connection",
        "POST and GET with an unknown Acp-Connection-Id get 404",
        ("RFD-HTTP-008",),
        "http",
    ),
    _e(
        "http-session-header",
        "a session-scoped POST without Acp-Session-Id gets 400",
        ("RFD-HTTP-009",),
        "http",
        "session",
    ),
    _e("http-batch", "a JSON-RPC batch gets 501", ("RFD-HTTP-010",), "http"),
    _e(
        "http-delete",
        "DELETE gets 202, ends the GET stream, and the id is unknown afterwards",
        ("RFD-HTTP-011",),
        "http",
    ),
    _e(
        "http2",
        "the endpoint speaks HTTP/2 (h2c prior knowledge, or ALPN h2 over TLS)",
        ("RFD-HTTP-012",),
        "http",
    ),
    _e(
        "cookies",
        "cookies the endpoint sets are returned by a client to the endpoint",
        ("RFD-HTTP-013",),
        "http",
        "cookies",
    ),
    _e(
        "stream-resume",
        "a stream reopened with Last-Event-ID resumes: nothing lost, nothing repeated",
        ("RFD-HTTP-014",),
        "http",
        "event-ids",
    ),
    _e(
        "cursor-every-message",
        "every message on the stream carries its cursor, as the SSE id and in _meta",
        ("RFD-DUR-001",),
        "http",
        "resumable",
    ),
    _e(
        "cursor-replay",
        "a stream resumed after a cut replays the same messages with their original cursors",
        ("RFD-DUR-002",),
        "http",
        "resumable",
    ),
    _e(
        "cursor-unknown",
        "a resume from a cursor the stream never had gets 409 with a reason, no live stream",
        ("RFD-DUR-003",),
        "http",
        "resumable",
    ),
    _e(
        "stream-keepalive",
        "an idle SSE stream is never silent longer than --keepalive-wait (20 s)",
        ("SSE-001",),
        "http",
    ),
    # endpoints: the WebSocket profile
    _e(
        "ws-upgrade",
        "GET with Upgrade: websocket is upgraded, Acp-Connection-Id in the 101",
        ("RFD-WS-001",),
        "websocket",
    ),
    _e(
        "ws-messages",
        "initialize, session/new and their answers travel as text frames",
        ("RFD-WS-002",),
        "websocket",
    ),
    _e(
        "ws-binary",
        "a binary frame is ignored and the socket stays open",
        ("RFD-WS-003",),
        "websocket",
    ),
    # endpoints: who may reach the agent, and who may see what
    _e(
        "auth-required",
        "without credentials, initialize gets 401 and the WebSocket upgrade is refused",
        ("SEC-001",),
        "security",
    ),
    _e(
        "auth-invalid-token",
        "with a wrong bearer token, initialize gets 401 and the upgrade is refused",
        ("SEC-002",),
        "security",
        "token",
    ),
    _e("auth-challenge", "a 401 carries WWW-Authenticate", ("SEC-003",), "security"),
    _e(
        "foreign-origin",
        "a foreign Origin is refused on POST and on the WebSocket upgrade",
        ("SEC-004",),
        "security",
    ),
    _e(
        "rebinding-host",
        "a foreign Host (DNS rebinding) is refused on POST and on the WebSocket upgrade",
        ("SEC-005",),
        "security",
        "loopback",
    ),
    _e(
        "principal-connections",
        "another principal's connection id is answered as an unknown one; it goes on",
        ("SEC-006",),
        "security",
        "token2",
    ),
    _e(
        "principal-sessions",
        "another principal cannot list, load, resume or prompt a session",
        ("SEC-007",),
        "security",
        "token2",
        "session",
    ),
    _e(
        "reattach",
        "the owner attaches its session from a second connection",
        ("SEC-008",),
        "security",
        "attach",
    ),
    _e(
        "connection-ids",
        "connection ids are all different, with at least 128 bits each",
        ("SEC-009",),
        "security",
    ),
    _e(
        "body-limit",
        "a POST declaring a 1 GiB body gets 413 before the body is sent",
        ("SEC-010",),
        "security",
    ),
)
V2_CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec(
        "v2-negotiation",
        "offered version 2, the agent answers 2 with its info",
        ("V2-INIT-001",),
        "v2",
        target="agent-v2",
    ),
    CheckSpec(
        "v2-prompt-accepted",
        "session/prompt is answered with a messageId, then the user message is reported",
        ("V2-PROMPT-001", "V2-PROMPT-002"),
        "v2",
        ("turn",),
        "agent-v2",
    ),
    CheckSpec(
        "v2-turn-states",
        "the turn runs between a running and an idle state_update with the stop reason",
        ("V2-PROMPT-003", "V2-PROMPT-004"),
        "v2",
        ("turn",),
        "agent-v2",
    ),
    CheckSpec(
        "v2-message-ids",
        "message updates and chunks carry a messageId",
        ("V2-MSG-001",),
        "v2",
        ("turn",),
        "agent-v2",
    ),
    CheckSpec(
        "v2-cancel",
        "session/cancel ends a slow prompt's work idle with stop reason cancelled",
        ("V2-CANCEL-001",),
        "v2",
        ("slow-prompt",),
        "agent-v2",
    ),
    CheckSpec(
        "v2-schema",
        "every message the agent sent is valid against the v2 draft's schema",
        ("V2-SCHEMA-001",),
        "v2",
        target="agent-v2",
    ),
)
"""The v2 draft's checks (``acp check --protocol 2``); they run on their own."""

CHECKS: tuple[CheckSpec, ...] = _V1_CHECKS + V2_CHECKS
CHECKS_BY_KEY: Mapping[str, CheckSpec] = {c.key: c for c in CHECKS}


def checks_for(*targets: Target) -> tuple[CheckSpec, ...]:
    """The checks run against these kinds of target."""
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
