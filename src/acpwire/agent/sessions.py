"""Live sessions of an app: state, recording into the session store, replay and listing.

A :class:`Session` is one session opened (new, load or resume) on one
connection. Everything it sends with :meth:`Session.send` goes to the client as
``session/update`` and is appended to the store, in wire form, so that
``session/load`` can replay it later (SESS-006). The user's prompt is recorded
as ``user_message_chunk`` entries without being echoed to the client.

Not recorded: ``config_option_update``, ``current_mode_update`` and
``available_commands_update``. They are state, not conversation: the
load/resume response carries the current values, commands are re-published
after each load/resume, and replaying an old option list could show a client
``boolean`` options it never advertised (CFG-003).

Recording goes through the app's :class:`~acpwire.agent.history.HistoryWriter`,
which merges a run of text chunks of one message into one record and commits
the history behind the conversation in batches; replay merges runs again on
read (:mod:`acpwire.agent.chunks` says why): a session of 2,000 one-word chunks
replays one update per message. A session flushes the writer before it reads
its history and when it saves (turn end, close), so what it reads and what a
client was answered about is committed.

On replay, ``terminal`` tool call content is replaced by the command's final
output as text: the terminal ids belong to a client that has released them
(TERM-007).

MCP servers: the ``mcpServers`` of the request that opened the session are
kept on :attr:`Session.mcp_servers` and connected once, by
:meth:`Session.connect_mcp`: when the session opens, in the background (the
runtime, unless the app connects on demand), or by the first
``turn.mcp_servers()``. :meth:`Session.close_mcp` stops them; the runtime calls
it when the session closes, is deleted or reopened, and when the connection
ends (docs/mcp.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

import msgspec

from .. import schema as s
from ..engine.trace import current_trace
from ..protocol.errors import ConnectionClosedError
from ..protocol.messages import encode_notification
from ..schema import to_json
from ..store import SessionRecord, utc_now
from .chunks import RunKey, coalesce, model_run_key
from .commands import Command
from .history import HistoryWriter
from .options import MODE_OPTION_ID, ConfigSpec, ConfigValue
from .v1 import ClientPeer

if TYPE_CHECKING:
    from .mcp import McpServers

__all__ = ["NOT_RECORDED", "McpSupport", "Session", "replayable"]

log = logging.getLogger("acpwire.agent")
_current_trace = current_trace.get  # bound once: read for every text chunk

NOT_RECORDED = frozenset(
    {"config_option_update", "current_mode_update", "available_commands_update"}
)
"""Update kinds that are state, not history (see the module docstring)."""

_TERMINAL_OUTPUT_LIMIT = 64 * 1024


def _tag(update: object) -> object:
    """The ``sessionUpdate`` tag of a tagged update model (None for any other value)."""
    config = getattr(type(update), "__struct_config__", None)
    return getattr(config, "tag", None)


def mcp_sdk_available() -> bool:
    """Whether the official ``mcp`` SDK can be imported (without importing it)."""
    try:
        import importlib.util

        return importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):  # pragma: no cover - broken installs
        return False


@dataclass
class McpSupport:
    """How an app's sessions connect their client's MCP servers; one per app.

    ``live`` holds every connected :class:`McpServers` of every connection, so
    :meth:`aclose` (app shutdown) can stop them all.
    """

    enabled: bool = True
    startup_timeout: float = 15.0
    client_name: str = "acpwire"
    client_version: str = "0"
    over_acp: bool = False
    """Take servers the client offers over ACP (unstable ACP; the app opted in)."""
    on_demand: bool = False
    """Connect a session's servers on its first ``turn.mcp_servers()`` rather than when
    the session opens."""
    live: set[McpServers] = field(default_factory=set["McpServers"])

    @property
    def capabilities(self) -> s.McpCapabilities:
        """What ``initialize`` advertises: HTTP and SSE (and ACP, if the app opted in to
        unstable ACP) only if enabled and the SDK is present."""
        usable = self.enabled and mcp_sdk_available()
        over_acp = usable and self.over_acp  # absent when false: the schema's default
        return s.McpCapabilities(http=usable, sse=usable, acp=True if over_acp else s.UNSET)

    async def aclose(self) -> None:
        """Disconnect every session's servers (stdio server processes are stopped)."""
        live, self.live = list(self.live), set()
        await asyncio.gather(*(m.aclose() for m in live), return_exceptions=True)


class Session:
    """One session, as handlers see it. ``state`` is yours: JSON values, saved with the session."""

    def __init__(
        self,
        record: SessionRecord,
        *,
        client: ClientPeer,
        history: HistoryWriter,
        config: ConfigSpec,
        booleans: bool,
        mcp_servers: Sequence[s.McpServer] = (),
        mcp: McpSupport | None = None,
    ) -> None:
        self.record = record
        self.client = client
        # client.session_update without its frame: a streaming turn sends through here.
        self._notify = client.connection.notify
        self._notify_encoded = client.connection.notify_encoded
        self._text_frame: _TextFrame | None = None  # of the message send_text sends
        self.writer = history
        self.store = history.store
        self.config_spec = config
        self.booleans = booleans
        self.mcp_servers = list(mcp_servers)
        """The ``mcpServers`` of the session/new, load or resume that opened the session."""
        self.mcp_support = mcp if mcp is not None else McpSupport(enabled=False)
        self._mcp: McpServers | None = None
        self._mcp_lock = asyncio.Lock()
        self._mcp_reported = False  # startup failures told to the client
        self.values: dict[str, ConfigValue] = config.restore(record.config_values, record.mode_id)
        meta = record.meta
        self.state: dict[str, Any] = dict(meta.get("state") or {})
        self._permission_memory: dict[str, str] = dict(meta.get("permissions") or {})
        self._terminal_outputs: dict[str, str] = dict(meta.get("terminals") or {})
        self.commands: list[Command] = []
        self.closed = False
        # What the store holds (up to empty defaults), to skip saves that change nothing.
        self._saved = _signature(self._settle())

    # -- what handlers read ------------------------------------------------

    @property
    def id(self) -> str:
        return self.record.session_id

    @property
    def cwd(self) -> str:
        return self.record.cwd

    @property
    def additional_directories(self) -> list[str]:
        return list(self.record.additional_directories)

    @property
    def roots(self) -> list[str]:
        """``[cwd, *additional_directories]``, the session's effective root set (SESS-022)."""
        return [self.cwd, *self.record.additional_directories]

    @property
    def title(self) -> str | None:
        return self.record.title

    @property
    def mode(self) -> str | None:
        """The current mode id, or None when the app declares no modes."""
        if not self.config_spec.has_modes:
            return None
        value = self.values.get(MODE_OPTION_ID)
        return value if isinstance(value, str) else None

    @property
    def config(self) -> Mapping[str, ConfigValue]:
        """Current config option values by id."""
        return dict(self.values)

    async def history(self) -> list[dict[str, Any]]:
        """Every recorded update of this session, oldest first, in wire form (one per message)."""
        await self.flush_history()
        return list(coalesce(await self.store.history(self.id)))

    # -- wire state ----------------------------------------------------------

    def modes_state(self) -> s.SessionModeState | None:
        return self.config_spec.mode_state(self.values)

    def config_options(self) -> list[s.SessionConfigOption] | None:
        if not self.config_spec.has_options:
            return None
        return self.config_spec.render(self.values, booleans=self.booleans)

    # -- sending and recording ---------------------------------------------

    async def send(self, update: s.SessionUpdate) -> None:
        """Send one ``session/update`` and record it (unless it is state, see NOT_RECORDED)."""
        chunk = model_run_key(update)
        if chunk is not None:
            await self.send_chunk(update, *chunk)
            return
        session_id = self.record.session_id
        await self._notify(
            "session/update", s.SessionNotification(session_id=session_id, update=update)
        )
        if _tag(update) in NOT_RECORDED:
            return  # state: known from its model's tag, no wire form needed
        wire = to_json(update)
        if wire.get("sessionUpdate") not in NOT_RECORDED:
            await self.writer.record(session_id, wire)

    async def send_chunk(self, update: s.SessionUpdate, key: RunKey, text: str) -> None:
        """:meth:`send` a text chunk whose :func:`~acpwire.agent.chunks.run_key` and text
        the caller knows: a chunk that continues the message in hand is recorded
        by adding its text to it, without turning the update into its wire form."""
        session_id = self.record.session_id
        await self._notify(
            "session/update", s.SessionNotification(session_id=session_id, update=update)
        )
        if not self.writer.join(session_id, key, text):
            await self.writer.record(session_id, to_json(update))

    async def send_text(self, kind: TextKind, message_id: str, text: str) -> None:
        """:meth:`send` a plain text chunk of a message: what ``turn.say``/``think`` send per token.

        No model is built: the line is the encoder's own bytes for this session,
        kind and message id (encoded once per message around a marker) with the
        text encoded in the marker's place, and the chunk is recorded by adding
        its text to the message in hand (as :meth:`send_chunk`).
        """
        frame = self._text_frame
        if frame is None or frame.message_id != message_id or frame.kind != kind:
            frame = self._text_frame = _TextFrame(kind, self.record.session_id, message_id)
        if frame.head is None or _current_trace() is not None:  # a trace goes in _meta
            await self._notify("session/update", frame.params(text))
        else:
            await self._notify_encoded(frame.head + _encode_text(text) + frame.tail)
        if not self.writer.join(frame.session_id, (kind, message_id, None), text):
            await self.writer.record(frame.session_id, to_json(frame.model(text)))

    async def record_update(self, wire: dict[str, Any]) -> None:
        """Append one update (wire form) to the history without sending it.

        It is committed with the next batch (:mod:`acpwire.agent.history`).
        Raises ``TypeError`` at once if ``wire`` is not a JSON object.
        """
        import json  # (not at start-up: few agents record updates by hand)

        try:  # agent code may pass anything, whatever the annotation says
            json.dumps(wire, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"session update is not JSON-serialisable: {exc}") from exc
        if type(wire) is not dict:
            raise TypeError(f"a session update must be a dict, got {type(wire).__name__}")
        await self.writer.record(self.id, wire)

    async def flush_history(self) -> None:
        """Commit every update recorded so far (turn end, save, before reading)."""
        await self.writer.flush()

    def remember_terminal(self, terminal_id: str, output: str) -> None:
        """Keep a released terminal's final output, shown in its place on replay."""
        self._terminal_outputs[terminal_id] = output[-_TERMINAL_OUTPUT_LIMIT:]

    def remembered_permission(self, key: str) -> str | None:
        """The ``allow_always`` / ``reject_always`` answer given for ``key``, if any."""
        return self._permission_memory.get(key)

    def remember_permission(self, key: str, kind: str) -> None:
        """Keep an ``allow_always`` / ``reject_always`` answer for later calls with ``key``."""
        self._permission_memory[key] = kind

    def take_mcp_report(self) -> bool:
        """True once per session: whoever gets it reports the MCP servers that failed to start."""
        if self._mcp_reported:
            return False
        self._mcp_reported = True
        return True

    async def save(self) -> None:
        """Commit the history, then persist title, mode, option values and ``state`` if changed.

        An unchanged record is not written again (a turn's history already
        bumped ``updated_at``): a ping prompt costs one transaction, not two.
        """
        await self.flush_history()
        rec = self._settle()
        if _signature(rec) == self._saved:
            return
        self.record = await self.store.update(rec)
        self._saved = _signature(self.record)

    def _settle(self) -> SessionRecord:
        """The record with the session's current values, as :meth:`save` stores it."""
        rec = self.record
        rec.config_values = dict(self.values)
        rec.mode_id = self.mode
        rec.meta = {
            **rec.meta,
            "state": self.state,
            "permissions": self._permission_memory,
            "terminals": self._terminal_outputs,
        }
        return rec

    async def save_quietly(self) -> None:
        try:
            await self.save()
        except Exception:
            log.exception("could not save session %s", self.id)

    # -- changes -------------------------------------------------------------

    async def set_title(self, title: str | None) -> None:
        """Change the title and tell the client (``session_info_update``)."""
        self.record.title = title
        await self.save()
        await self.send(s.SessionInfoUpdate(title=title, updated_at=self.record.updated_at))

    async def set_mode(self, mode_id: str) -> None:
        """Switch mode (validated), save, and send ``current_mode_update`` (+ ``config_option_update``)."""
        self.config_spec.check_mode(mode_id)
        await self._change(MODE_OPTION_ID, mode_id)

    async def set_option(self, config_id: str, value: object) -> list[s.SessionConfigOption]:
        """Change one config option (validated), save, notify; returns the complete list."""
        checked = self.config_spec.check_value(config_id, value, booleans=self.booleans)
        await self._change(config_id, checked)
        return self.config_options() or []

    async def _change(self, config_id: str, value: ConfigValue) -> None:
        changed = self.values.get(config_id) != value
        self.values[config_id] = value
        await self.save()
        if not changed:
            return
        if config_id == MODE_OPTION_ID and self.config_spec.has_modes and isinstance(value, str):
            await self.send(s.CurrentModeUpdate(current_mode_id=value))
        options = self.config_options()
        if options is not None:
            await self.send(s.ConfigOptionUpdate(config_options=options))

    async def publish_commands(self, commands: Sequence[Command]) -> None:
        """Send ``available_commands_update`` with the complete command list."""
        self.commands = list(commands)
        await self.send(
            s.AvailableCommandsUpdate(available_commands=[c.wire for c in self.commands])
        )

    # -- MCP servers ---------------------------------------------------------

    @property
    def mcp(self) -> McpServers | None:
        """The connected MCP servers, or None before the first :meth:`connect_mcp`."""
        return self._mcp

    async def connect_mcp(self) -> McpServers:
        """Connect the session's MCP servers, once: later calls (and a call while the first
        connects) return the same set.

        Servers that cannot be used (failed start, timeout, refused transport,
        no ``mcp`` SDK installed) are recorded in ``failures``; this never
        raises for them. Raises ``RuntimeError`` if the app disabled MCP.
        """
        from .mcp import McpServers  # only agents whose sessions use MCP load it

        support = self.mcp_support
        if not support.enabled:
            raise RuntimeError("MCP support is disabled for this agent (AgentApp(mcp=False))")
        if self.closed:
            raise RuntimeError(f"session {self.id} is closed")
        async with self._mcp_lock:
            if self._mcp is not None:
                return self._mcp
            if self.mcp_servers and not mcp_sdk_available():
                servers = McpServers([])
                await servers.start()
                for index, server in enumerate(self.mcp_servers):
                    name = getattr(server, "name", None)
                    servers.failures[name if isinstance(name, str) else f"#{index}"] = (
                        "the MCP Python SDK is not installed on the agent's side "
                        "(pip install 'acpwire[mcp]')"
                    )
                self._mcp = servers
                return servers
            cwd: str | None = self.cwd
            if not await asyncio.to_thread(os.path.isdir, self.cwd):
                log.warning(
                    "session cwd %s does not exist here; MCP servers run in the agent's", cwd
                )
                cwd = None
            servers = McpServers(
                self.mcp_servers,
                capabilities=self.advertised_mcp(),
                startup_timeout=support.startup_timeout,
                cwd=cwd,
                client_name=support.client_name,
                client_version=support.client_version,
                client=self.client,
            )
            support.live.add(servers)
            try:
                await servers.start()  # stops what it started if cancelled
            except BaseException:
                support.live.discard(servers)
                raise
            if self.closed:  # closed while starting
                support.live.discard(servers)
                await servers.aclose()
                raise RuntimeError(f"session {self.id} is closed")
            self._mcp = servers
            return servers

    def advertised_mcp(self) -> s.McpCapabilities:
        """The MCP capabilities this connection's ``initialize`` advertised (they differ
        from the app's for a client that does not read unstable ACP: no ``acp``)."""
        own = self.client.local_capabilities
        mcp = own.mcp_capabilities if isinstance(own, s.AgentCapabilities) else None
        return mcp if isinstance(mcp, s.McpCapabilities) else self.mcp_support.capabilities

    async def close_mcp(self) -> None:
        """Disconnect the session's MCP servers, if connected. Idempotent."""
        servers, self._mcp = self._mcp, None
        if servers is not None:
            self.mcp_support.live.discard(servers)
            await servers.aclose()

    # -- replay --------------------------------------------------------------

    async def replay(self) -> int:
        """Send the whole recorded history as ``session/update`` (SESS-006); returns the count.

        Consecutive chunks of one message go as one update.
        """
        history = await self.history()
        for update in history:
            payload = {"sessionId": self.id, "update": replayable(update, self._terminal_outputs)}
            await self.client.connection.notify("session/update", payload)
        return len(history)

    async def send_quietly(self, update: s.SessionUpdate) -> None:
        with contextlib.suppress(ConnectionClosedError, OSError):
            await self.send(update)


TextKind = Literal["agent_message_chunk", "agent_thought_chunk"]
_TEXT_CHUNKS: dict[str, type[s.AgentMessageChunk | s.AgentThoughtChunk]] = {
    "agent_message_chunk": s.AgentMessageChunk,
    "agent_thought_chunk": s.AgentThoughtChunk,
}
_MARK = "\x00acpwire text\x00"
_encode_text = msgspec.json.Encoder().encode  # a str needs no hooks
_ENCODED_MARK = _encode_text(_MARK)


class _TextFrame:
    """The ``session/update`` line of a text chunk of one message as the encoder
    writes it, split around the text: a chunk's line is ``head + text + tail``."""

    __slots__ = ("head", "kind", "message_id", "session_id", "tail")

    def __init__(self, kind: TextKind, session_id: str, message_id: str) -> None:
        self.kind, self.session_id, self.message_id = kind, session_id, message_id
        line = encode_notification("session/update", self.params(_MARK))
        self.head: bytes | None = None
        self.tail = b""
        if line.count(_ENCODED_MARK) == 1:  # (ids that hold the marker take the slow path)
            self.head, _, self.tail = line.partition(_ENCODED_MARK)

    def model(self, text: str) -> s.AgentMessageChunk | s.AgentThoughtChunk:
        return _TEXT_CHUNKS[self.kind](content=s.TextContent(text=text), message_id=self.message_id)

    def params(self, text: str) -> s.SessionNotification:
        return s.SessionNotification(session_id=self.session_id, update=self.model(text))


def _signature(record: SessionRecord) -> bytes:
    """The saved fields of a record as JSON, to tell whether saving would change anything."""
    fields: list[object] = [record.cwd, record.additional_directories, record.title]
    fields += [record.mode_id, record.config_values, record.meta, record.owner]
    try:
        return msgspec.json.encode(fields, order="sorted", enc_hook=repr)
    except (TypeError, ValueError, OverflowError):  # what JSON cannot say: the store will refuse it
        return repr(fields).encode()


def replayable(update: dict[str, Any], terminal_outputs: Mapping[str, str]) -> dict[str, Any]:
    """A recorded update ready to send again: terminal content becomes its final output."""
    content = update.get("content")
    if update.get("sessionUpdate") not in ("tool_call", "tool_call_update") or not isinstance(
        content, list
    ):
        return update
    replaced: list[Any] = []
    for item in cast("list[object]", content):  # recorded wire JSON
        block = cast("dict[str, Any]", item) if isinstance(item, dict) else None
        if block is not None and block.get("type") == "terminal":
            output = terminal_outputs.get(str(block.get("terminalId")), "")
            item = {
                "type": "content",
                "content": {"type": "text", "text": output or "(terminal output not kept)"},
            }
        replaced.append(item)
    return {**update, "content": replaced}


def new_record(
    session_id: str, cwd: str, additional_directories: Sequence[str], config: ConfigSpec
) -> SessionRecord:
    """The record of a brand-new session, with default option values."""
    values = config.initial_values()
    mode = values.get(MODE_OPTION_ID) if config.has_modes else None
    return SessionRecord(
        session_id=session_id,
        cwd=cwd,
        additional_directories=list(additional_directories),
        created_at=utc_now(),
        mode_id=mode if isinstance(mode, str) else None,
        config_values=values,
    )
