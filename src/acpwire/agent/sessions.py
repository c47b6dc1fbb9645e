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

On replay, ``terminal`` tool call content is replaced by the command's final
output as text: the terminal ids belong to a client that has released them
(TERM-007).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import schema as s
from ..protocol.errors import ConnectionClosedError
from ..schema import to_json
from .commands import Command
from .connection import ClientPeer
from .options import MODE_OPTION_ID, ConfigSpec, ConfigValue
from .store import SessionRecord, SessionStore, utc_now

if TYPE_CHECKING:
    from .turn import Turn

__all__ = ["NOT_RECORDED", "Session", "replayable"]

log = logging.getLogger("acpwire.agent")

NOT_RECORDED = frozenset(
    {"config_option_update", "current_mode_update", "available_commands_update"}
)
"""Update kinds that are state, not history (see the module docstring)."""

_TERMINAL_OUTPUT_LIMIT = 64 * 1024


class Session:
    """One session, as handlers see it. ``state`` is yours: JSON values, saved with the session."""

    def __init__(
        self,
        record: SessionRecord,
        *,
        client: ClientPeer,
        store: SessionStore,
        config: ConfigSpec,
        booleans: bool,
        mcp_servers: Sequence[s.McpServer] = (),
    ) -> None:
        self.record = record
        self.client = client
        self.store = store
        self.config_spec = config
        self.booleans = booleans
        self.mcp_servers = list(mcp_servers)
        self.values: dict[str, ConfigValue] = config.restore(record.config_values, record.mode_id)
        meta = record.meta
        self.state: dict[str, Any] = dict(meta.get("state") or {})
        self._permission_memory: dict[str, str] = dict(meta.get("permissions") or {})
        self._terminal_outputs: dict[str, str] = dict(meta.get("terminals") or {})
        self.commands: list[Command] = []
        self.turn: Turn | None = None
        self.closed = False

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
        """Every recorded update of this session, oldest first, in wire form."""
        return await self.store.history(self.id)

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
        await self.client.session_update(self.id, update)
        wire = to_json(update)
        if wire.get("sessionUpdate") not in NOT_RECORDED:
            await self.record_update(wire)

    async def record_update(self, wire: dict[str, Any]) -> None:
        """Append one update (wire form) to the history without sending it."""
        try:
            await self.store.append(self.id, wire)
        except Exception:  # a full disk must not break the conversation
            log.exception("could not record an update of session %s", self.id)

    def remember_terminal(self, terminal_id: str, output: str) -> None:
        """Keep a released terminal's final output, shown in its place on replay."""
        self._terminal_outputs[terminal_id] = output[-_TERMINAL_OUTPUT_LIMIT:]

    async def save(self) -> None:
        """Persist title, mode, option values and ``state``."""
        rec = self.record
        rec.config_values = dict(self.values)
        rec.mode_id = self.mode
        rec.meta = {
            **rec.meta,
            "state": self.state,
            "permissions": self._permission_memory,
            "terminals": self._terminal_outputs,
        }
        self.record = await self.store.update(rec)

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
            s.AvailableCommandsUpdate(available_commands=[c.to_wire() for c in self.commands])
        )

    # -- replay --------------------------------------------------------------

    async def replay(self) -> int:
        """Send the whole recorded history as ``session/update`` (SESS-006); returns the count."""
        history = await self.store.history(self.id)
        for update in history:
            payload = {"sessionId": self.id, "update": replayable(update, self._terminal_outputs)}
            await self.client.connection.notify("session/update", payload)
        return len(history)

    async def send_quietly(self, update: s.SessionUpdate) -> None:
        with contextlib.suppress(ConnectionClosedError, OSError):
            await self.send(update)


def replayable(update: dict[str, Any], terminal_outputs: Mapping[str, str]) -> dict[str, Any]:
    """A recorded update ready to send again: terminal content becomes its final output."""
    content = update.get("content")
    if update.get("sessionUpdate") not in ("tool_call", "tool_call_update") or not isinstance(
        content, list
    ):
        return update
    replaced: list[Any] = []
    for item in content:
        if isinstance(item, dict) and item.get("type") == "terminal":
            output = terminal_outputs.get(str(item.get("terminalId")), "")
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
