#!/usr/bin/env python3
"""Interop peer AGENT on acpwire's low tier (``acpwire.agent.connection.Agent``).

    .venv/bin/python tests/interop/peers/acpwire_agent.py [--wire-log FILE]

Speaks ACP v1 on stdin/stdout and implements the prompt command language of
``tests/interop/PEERS.md`` and every stable v1 agent method: initialize (version
negotiation), authenticate, logout, session new/load (history replayed before
the answer)/list (cwd filter, cursor of 2 per page)/resume/close/delete,
additional directories, set_mode, set_config_option, prompt, session/cancel,
``$/cancel_request``, extension methods and notifications. ``--wire-log`` appends
every message of both directions to FILE (JSON lines) for schema validation.

Choices where PEERS.md leaves room (the TypeScript peer agent's, except where noted):
* ``$/cancel_request`` for a running ``session/prompt`` is acpwire's engine
  behaviour: the handler task is cancelled and the request answers ``-32800``
  (the TS peer answers ``{"stopReason": "cancelled"}`` instead).
* When a turn is cancelled, ``$/cancel_request`` is sent for the turn's pending
  client requests and their real answers are still awaited (3 s at most).
* Sessions: list pages in creation order with decimal-offset cursors; closed
  sessions stay listed until deleted; load/resume reactivate them; prompting a
  closed or unknown session is ``-32002``; a second prompt while a turn runs is
  ``-32600``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import logging
import os
import sys
import uuid
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _acpwire_wire import RecordingTransport, start_with_ids

from acpwire import schema as s
from acpwire.agent.connection import Agent, AgentSideConnection
from acpwire.protocol.errors import (
    InternalError,
    InvalidParams,
    InvalidRequest,
    RequestError,
    ResourceNotFound,
)
from acpwire.protocol.version import negotiate
from acpwire.schema import UNSET, UnsetType
from acpwire.transports.stdio import stdio_transport

log = logging.getLogger("acpwire_agent")

AGENT_NAME = "acpwire-peer-agent"
PAGE_SIZE = 2
SLOW_SECONDS = 600.0  # longer than any test waits: a lost cancel fails by timeout
CANCEL_GRACE = 3.0
OUTPUT_BYTE_LIMIT = 64 * 1024

MODES = [
    s.SessionMode(id="ask", name="Ask", description="Ask before changing anything"),
    s.SessionMode(id="code", name="Code", description="Change code without asking"),
]
MODEL_VALUES = [
    s.SessionConfigSelectOption(value="fast", name="Fast", description="Quick answers"),
    s.SessionConfigSelectOption(value="smart", name="Smart", description="Careful answers"),
]
PERMISSION_OPTIONS = [
    s.PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
    s.PermissionOption(option_id="always", name="Always allow", kind="allow_always"),
    s.PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]


def now() -> str:
    return (
        dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def unset(value: Any) -> bool:
    return value is None or isinstance(value, UnsetType)


def text_block(text: str) -> s.TextContent:
    return s.TextContent(text=text)


def error_text(exc: BaseException) -> str:
    if isinstance(exc, RequestError):
        return f"{exc.code} {exc.message}"
    return f"{type(exc).__name__}: {exc}"


class TurnCancelled(Exception):
    pass


class TurnStop(Exception):
    def __init__(self, stop_reason: str) -> None:
        super().__init__(stop_reason)
        self.stop_reason = stop_reason


@dataclass
class Session:
    session_id: str
    cwd: str
    additional_directories: list[str] = field(default_factory=list)
    title: str | None = None
    updated_at: str = field(default_factory=now)
    mode_id: str = "ask"
    model: str = "fast"
    history: list[Any] = field(default_factory=list)
    active: bool = True
    turn: Turn | None = None
    tool_counter: int = 0


class Turn:
    """One prompt turn: sends its session's updates and tracks cancellation."""

    def __init__(self, agent: PeerAgent, session: Session) -> None:
        self.agent = agent
        self.session = session
        self.cancelled = asyncio.Event()
        self.done = asyncio.Event()

    @property
    def client(self) -> Any:
        return self.agent.client

    def check(self) -> None:
        if self.cancelled.is_set():
            raise TurnCancelled()

    async def update(self, update: Any) -> None:
        await self.client.session_update(self.session.session_id, update)

    async def chunk(
        self, cls: type, text: str, *, message_id: str | None = None, meta: Any = UNSET
    ) -> None:
        update = cls(
            content=text_block(text), message_id=message_id or str(uuid.uuid4()), meta=meta
        )
        if cls in (s.AgentMessageChunk, s.UserMessageChunk):
            self.session.history.append(update)
        await self.update(update)

    async def message(self, text: str) -> None:
        await self.chunk(s.AgentMessageChunk, text)

    def next_tool_id(self) -> str:
        self.session.tool_counter += 1
        return f"t{self.session.tool_counter}"

    async def call(self, make: Any) -> Any:
        """A request to the client. If the turn is cancelled meanwhile, send
        ``$/cancel_request`` for it and still wait (a while) for the real answer."""
        task, ids = start_with_ids(make)
        waiter = asyncio.ensure_future(self.cancelled.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                for request_id in ids:
                    with contextlib.suppress(Exception):
                        await self.client.cancel_request(request_id)
                await asyncio.wait({task}, timeout=CANCEL_GRACE)
            if not task.done():
                task.cancel()
                raise TurnCancelled()
            return task.result()
        finally:
            waiter.cancel()
            if not task.done():
                task.cancel()

    async def permission(self, tool_call: s.ToolCallUpdate) -> str:
        response = await self.call(
            lambda: self.client.request_permission(
                self.session.session_id, tool_call, PERMISSION_OPTIONS
            )
        )
        outcome = response.outcome
        if isinstance(outcome, s.SelectedPermissionOutcome):
            return outcome.option_id
        return "cancelled"

    async def sleep(self, seconds: float) -> bool:
        """True when the time passed, False when the turn was cancelled first."""
        try:
            await asyncio.wait_for(self.cancelled.wait(), seconds)
        except asyncio.TimeoutError:
            return True
        return False


def tool_update(tool_call_id: str, **fields: Any) -> s.ToolCallProgress:
    return s.ToolCallProgress(tool_call_id=tool_call_id, **fields)


def text_content(text: str) -> list[Any]:
    return [s.Content(content=text_block(text))]


class PeerAgent(Agent):
    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self.client_caps = s.ClientCapabilities()
        self.authenticated = False

    # -- capabilities ------------------------------------------------------

    def caps_fs(self, which: str) -> bool:
        fs = self.client_caps.fs
        return not unset(fs) and getattr(fs, which) is True

    def caps_terminal(self) -> bool:
        return self.client_caps.terminal is True

    def caps_elicitation_form(self) -> bool:
        el = self.client_caps.elicitation
        return not unset(el) and not unset(el.form)

    # -- helpers -------------------------------------------------------------

    def get(self, session_id: str, *, active_only: bool = True) -> Session:
        session = self.sessions.get(session_id)
        if session is None or (active_only and not session.active):
            raise ResourceNotFound(
                f"Resource not found: session {session_id}", {"sessionId": session_id}
            )
        return session

    @staticmethod
    def check_absolute(path: Any, what: str) -> None:
        if not isinstance(path, str) or not os.path.isabs(path):
            raise InvalidParams(f"{what} must be an absolute path", {what: path})

    def attach(self, session: Session, cwd: str, dirs: Any) -> None:
        self.check_absolute(cwd, "cwd")
        if not unset(dirs):
            for d in dirs:
                self.check_absolute(d, "additionalDirectories")
            session.additional_directories = list(dirs)
        session.cwd = cwd
        session.active = True
        session.updated_at = now()

    @staticmethod
    def modes(session: Session) -> s.SessionModeState:
        return s.SessionModeState(current_mode_id=session.mode_id, available_modes=MODES)

    @staticmethod
    def config_options(session: Session) -> list[Any]:
        return [
            s.SessionConfigSelect(
                id="model",
                name="Model",
                description="Which model answers",
                category="model",
                current_value=session.model,
                options=MODEL_VALUES,
            )
        ]

    async def stop_turn(self, session: Session) -> None:
        turn = session.turn
        if turn is not None:
            turn.cancelled.set()
            await turn.done.wait()

    # -- agent methods -------------------------------------------------------

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        caps = params.client_capabilities
        self.client_caps = s.ClientCapabilities() if unset(caps) else caps
        log.info("initialize: protocolVersion=%s", params.protocol_version)
        return s.InitializeResponse(
            protocol_version=negotiate(params.protocol_version),
            agent_capabilities=s.AgentCapabilities(
                load_session=True,
                prompt_capabilities=s.PromptCapabilities(
                    image=True, audio=True, embedded_context=True
                ),
                mcp_capabilities=s.McpCapabilities(http=False, sse=False),
                session_capabilities=s.SessionCapabilities(
                    list=s.SessionListCapabilities(),
                    delete=s.SessionDeleteCapabilities(),
                    additional_directories=s.SessionAdditionalDirectoriesCapabilities(),
                    resume=s.SessionResumeCapabilities(),
                    close=s.SessionCloseCapabilities(),
                ),
                auth=s.AgentAuthCapabilities(logout=s.LogoutCapabilities()),
                meta={"acpwire/peer": {"sdk": "acpwire", "commandLanguage": True}},
            ),
            auth_methods=[
                s.AuthMethodAgent(
                    id="token", name="Token", description="Accepts any token; always succeeds"
                )
            ],
            agent_info=s.Implementation(name=AGENT_NAME, title="acpwire peer agent", version="1"),
        )

    async def authenticate(self, params: s.AuthenticateRequest) -> s.AuthenticateResponse:
        if params.method_id != "token":
            raise InvalidParams(
                f"unknown auth method {params.method_id}", {"methodId": params.method_id}
            )
        self.authenticated = True
        return s.AuthenticateResponse()

    async def logout(self, params: s.LogoutRequest) -> s.LogoutResponse:
        self.authenticated = False
        return s.LogoutResponse()

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        session = Session(session_id=f"sess_{uuid.uuid4().hex[:20]}", cwd=params.cwd)
        self.attach(session, params.cwd, params.additional_directories)
        self.sessions[session.session_id] = session
        return s.NewSessionResponse(
            session_id=session.session_id,
            modes=self.modes(session),
            config_options=self.config_options(session),
        )

    async def load_session(self, params: s.LoadSessionRequest) -> s.LoadSessionResponse:
        session = self.get(params.session_id, active_only=False)
        await self.stop_turn(session)
        self.attach(session, params.cwd, params.additional_directories)
        for update in session.history:
            await self.client.session_update(session.session_id, update)
        return s.LoadSessionResponse(
            modes=self.modes(session), config_options=self.config_options(session)
        )

    async def resume_session(self, params: s.ResumeSessionRequest) -> s.ResumeSessionResponse:
        session = self.get(params.session_id, active_only=False)
        self.attach(session, params.cwd, params.additional_directories)
        return s.ResumeSessionResponse(
            modes=self.modes(session), config_options=self.config_options(session)
        )

    async def close_session(self, params: s.CloseSessionRequest) -> s.CloseSessionResponse:
        session = self.get(params.session_id)
        await self.stop_turn(session)
        session.active = False
        return s.CloseSessionResponse()

    async def delete_session(self, params: s.DeleteSessionRequest) -> s.DeleteSessionResponse:
        session = self.sessions.get(params.session_id)
        if session is not None:
            await self.stop_turn(session)
            del self.sessions[params.session_id]
        return s.DeleteSessionResponse()

    async def list_sessions(self, params: s.ListSessionsRequest) -> s.ListSessionsResponse:
        found = list(self.sessions.values())
        if not unset(params.cwd):
            found = [x for x in found if x.cwd == params.cwd]
        start = 0
        if not unset(params.cursor):
            cursor = params.cursor
            if not cursor.isdigit() or int(cursor) > len(found):
                raise InvalidParams("invalid cursor", {"cursor": cursor})
            start = int(cursor)
        page = [
            s.SessionInfo(
                session_id=x.session_id,
                cwd=x.cwd,
                title=UNSET if x.title is None else x.title,
                updated_at=x.updated_at,
                additional_directories=list(x.additional_directories)
                if x.additional_directories
                else UNSET,
            )
            for x in found[start : start + PAGE_SIZE]
        ]
        more = start + PAGE_SIZE < len(found)
        return s.ListSessionsResponse(
            sessions=page, next_cursor=str(start + PAGE_SIZE) if more else UNSET
        )

    async def set_session_mode(self, params: s.SetSessionModeRequest) -> s.SetSessionModeResponse:
        session = self.get(params.session_id)
        if params.mode_id not in {m.id for m in MODES}:
            raise InvalidParams(f"unknown mode {params.mode_id}", {"modeId": params.mode_id})
        session.mode_id = params.mode_id
        return s.SetSessionModeResponse()

    async def set_session_config_option(
        self, params: s.SetSessionConfigOptionRequest
    ) -> s.SetSessionConfigOptionResponse:
        session = self.get(params.session_id)
        if params.config_id != "model":
            raise InvalidParams(
                f"unknown config option {params.config_id}", {"configId": params.config_id}
            )
        if isinstance(params.value, bool) or params.value not in {v.value for v in MODEL_VALUES}:
            raise InvalidParams(
                f"invalid value for model: {json.dumps(params.value)}", {"value": params.value}
            )
        session.model = params.value
        return s.SetSessionConfigOptionResponse(config_options=self.config_options(session))

    async def cancel(self, params: s.CancelNotification) -> None:
        session = self.sessions.get(params.session_id)
        if session is not None and session.turn is not None:
            log.info("session/cancel for %s", params.session_id)
            session.turn.cancelled.set()
        elif session is None:
            log.info("session/cancel for unknown session %s", params.session_id)

    async def ext_method(self, method: str, params: Any) -> Any:
        if method == "_acpwire/echo":
            return params if params is not None else {}
        return await super().ext_method(method, params)

    async def ext_notification(self, method: str, params: Any) -> None:
        log.warning("notification %s %s", method, json.dumps(params))

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        session = self.get(params.session_id)
        if session.turn is not None:
            raise InvalidRequest(
                "a prompt turn is already running", {"sessionId": session.session_id}
            )
        turn = Turn(self, session)
        session.turn = turn
        user_message_id = str(uuid.uuid4())
        for block in params.prompt:
            session.history.append(s.UserMessageChunk(content=block, message_id=user_message_id))
        session.updated_at = now()
        try:
            texts = [b.text for b in params.prompt if isinstance(b, s.TextContent)]
            for raw in "\n".join(texts).split("\n"):
                line = raw.strip()
                if not line:
                    continue
                turn.check()
                name, _, rest = line.partition(" ")
                handler = getattr(self, f"cmd_{name}", None)
                if handler is None:
                    await turn.message(f"unknown command: {line}")
                else:
                    await handler(turn, rest.strip())
            turn.check()
            return s.PromptResponse(stop_reason="end_turn")
        except TurnStop as stop:
            return s.PromptResponse(stop_reason=stop.stop_reason)
        except TurnCancelled:
            return s.PromptResponse(stop_reason="cancelled")
        except RequestError:
            if turn.cancelled.is_set():
                return s.PromptResponse(stop_reason="cancelled")
            raise
        finally:
            session.turn = None
            turn.done.set()

    # -- commands --------------------------------------------------------------

    async def cmd_echo(self, turn: Turn, rest: str) -> None:
        await turn.message(rest)

    async def cmd_stream(self, turn: Turn, rest: str) -> None:
        count = int(rest) if rest.isdigit() else 0
        message_id = str(uuid.uuid4())
        for i in range(count):
            turn.check()
            await turn.chunk(s.AgentMessageChunk, f"chunk {i}", message_id=message_id)

    async def cmd_think(self, turn: Turn, rest: str) -> None:
        await turn.chunk(s.AgentThoughtChunk, rest)

    async def cmd_user(self, turn: Turn, rest: str) -> None:
        await turn.chunk(s.UserMessageChunk, rest)

    async def cmd_plan(self, turn: Turn, rest: str) -> None:
        await turn.update(
            s.PlanUpdate(
                entries=[
                    s.PlanEntry(content="Read the code", priority="high", status="pending"),
                    s.PlanEntry(content="Change the code", priority="medium", status="in_progress"),
                    s.PlanEntry(content="Run the tests", priority="low", status="completed"),
                ]
            )
        )

    async def cmd_tool(self, turn: Turn, rest: str) -> None:
        tid = turn.next_tool_id()
        await turn.update(
            s.ToolCallStart(
                tool_call_id=tid,
                title="Demo tool",
                kind="other",
                status="pending",
                raw_input={"demo": True},
            )
        )
        await turn.update(tool_update(tid, status="in_progress"))
        await turn.update(
            tool_update(
                tid, status="completed", content=text_content("tool done"), raw_output={"ok": True}
            )
        )

    async def cmd_read(self, turn: Turn, rest: str) -> None:
        parts = rest.split()
        if not parts:
            await turn.message("read failed: missing PATH")
            return
        path = parts[0] if os.path.isabs(parts[0]) else os.path.join(turn.session.cwd, parts[0])
        line = int(parts[1]) if len(parts) > 1 else None
        limit = int(parts[2]) if len(parts) > 2 else None
        tid = turn.next_tool_id()
        await turn.update(
            s.ToolCallStart(
                tool_call_id=tid,
                title=f"Read {path}",
                kind="read",
                status="pending",
                locations=[s.ToolCallLocation(path=path, line=UNSET if line is None else line)],
                raw_input={"path": path, "line": line, "limit": limit},
            )
        )
        try:
            if self.caps_fs("read_text_file"):
                result = await turn.call(
                    lambda: self.client.read_text_file(
                        turn.session.session_id, path, line=line, limit=limit
                    )
                )
                content = result.content
            else:  # no fs capability: the agent reads the disk itself (the spec's fallback)
                content = read_local(path, line, limit)
        except RequestError as exc:
            turn.check()
            await turn.update(
                tool_update(tid, status="failed", content=text_content(error_text(exc)))
            )
            await turn.message(f"read failed: {error_text(exc)}")
            return
        await turn.message(content)
        await turn.update(tool_update(tid, status="completed", content=text_content(content)))

    async def cmd_write(self, turn: Turn, rest: str) -> None:
        path, _, text = rest.partition(" ")
        if not path:
            await turn.message("write failed: missing PATH")
            return
        path = path if os.path.isabs(path) else os.path.join(turn.session.cwd, path)
        tid = turn.next_tool_id()
        await turn.update(
            s.ToolCallStart(
                tool_call_id=tid,
                title=f"Write {path}",
                kind="edit",
                status="pending",
                locations=[s.ToolCallLocation(path=path)],
                content=[s.Diff(path=path, old_text=None, new_text=text)],
                raw_input={"path": path, "content": text},
            )
        )
        option = await turn.permission(
            s.ToolCallUpdate(
                tool_call_id=tid,
                title=f"Write {path}",
                kind="edit",
                status="pending",
                locations=[s.ToolCallLocation(path=path)],
                content=[s.Diff(path=path, old_text=None, new_text=text)],
            )
        )
        if option in ("allow", "always") and not turn.cancelled.is_set():
            await turn.update(tool_update(tid, status="in_progress"))
            try:
                if self.caps_fs("write_text_file"):
                    await turn.call(
                        lambda: self.client.write_text_file(turn.session.session_id, path, text)
                    )
                else:
                    await asyncio.to_thread(write_local, path, text)
            except (RequestError, OSError) as exc:
                await turn.update(
                    tool_update(tid, status="failed", content=text_content(error_text(exc)))
                )
                await turn.message(f"permission: {option}")
                await turn.message(f"write failed: {error_text(exc)}")
                return
            await turn.update(tool_update(tid, status="completed"))
        else:
            await turn.update(tool_update(tid, status="failed"))
        await turn.message(f"permission: {option}")

    async def cmd_run(self, turn: Turn, rest: str) -> None:
        await self.execute(turn, rest, kill=False)

    async def cmd_kill(self, turn: Turn, rest: str) -> None:
        await self.execute(turn, rest, kill=True)

    async def execute(self, turn: Turn, rest: str, *, kill: bool) -> None:
        word = "kill" if kill else "run"
        argv = rest.split()
        if not argv:
            await turn.message(f"{word} failed: missing CMD")
            return
        command, args = argv[0], argv[1:]
        tid = turn.next_tool_id()
        title = f"{'Kill' if kill else 'Run'}: {' '.join(argv)}"
        await turn.update(
            s.ToolCallStart(
                tool_call_id=tid,
                title=title,
                kind="execute",
                status="pending",
                raw_input={"command": command, "args": args},
            )
        )
        option = await turn.permission(
            s.ToolCallUpdate(tool_call_id=tid, title=title, kind="execute", status="pending")
        )
        if option not in ("allow", "always") or turn.cancelled.is_set():
            await turn.update(tool_update(tid, status="failed"))
            await turn.message(f"permission: {option}")
            return
        await turn.message(f"permission: {option}")
        if not self.caps_terminal():
            await turn.update(tool_update(tid, status="failed"))
            await turn.message(f"{word} failed: client has no terminal capability")
            return
        sid = turn.session.session_id
        try:
            created = await turn.call(
                lambda: self.client.create_terminal(
                    sid, command, args, cwd=turn.session.cwd, output_byte_limit=OUTPUT_BYTE_LIMIT
                )
            )
        except RequestError as exc:
            turn.check()
            await turn.update(tool_update(tid, status="failed"))
            await turn.message(f"{word} failed: {error_text(exc)}")
            return
        term = created.terminal_id
        try:
            await turn.update(
                tool_update(tid, status="in_progress", content=[s.Terminal(terminal_id=term)])
            )
            if kill:
                await turn.call(lambda: self.client.kill_terminal(sid, term))
            exit_status = await turn.call(lambda: self.client.wait_for_terminal_exit(sid, term))
            output = await turn.call(lambda: self.client.terminal_output(sid, term))
        finally:
            try:
                await self.client.release_terminal(sid, term)
            except RequestError as exc:
                log.warning("terminal/release failed: %s", exc)
        code = None if unset(exit_status.exit_code) else exit_status.exit_code
        sig = None if unset(exit_status.signal) else exit_status.signal
        await turn.update(
            tool_update(
                tid,
                status="completed" if code == 0 or kill else "failed",
                raw_output={"exitCode": code, "signal": sig, "truncated": output.truncated},
            )
        )
        if kill:
            await turn.message(f"killed: {sig if sig is not None else code}")
        else:
            shown = code if code is not None else sig
            await turn.message(f"exit: {shown} output: {output.output.rstrip()}")

    async def cmd_permission(self, turn: Turn, rest: str) -> None:
        tid = turn.next_tool_id()
        option = await turn.permission(
            s.ToolCallUpdate(tool_call_id=tid, title="May I?", kind="other", status="pending")
        )
        await turn.message(f"permission: {option}")

    async def cmd_mode(self, turn: Turn, rest: str) -> None:
        if rest not in {m.id for m in MODES}:
            await turn.message(f"unknown mode: {rest}")
            return
        turn.session.mode_id = rest
        await turn.update(s.CurrentModeUpdate(current_mode_id=rest))

    async def cmd_config(self, turn: Turn, rest: str) -> None:
        await turn.update(s.ConfigOptionUpdate(config_options=self.config_options(turn.session)))

    async def cmd_commands(self, turn: Turn, rest: str) -> None:
        await turn.update(
            s.AvailableCommandsUpdate(
                available_commands=[
                    s.AvailableCommand(
                        name="help", description="List the commands of the peer agent"
                    ),
                    s.AvailableCommand(
                        name="test",
                        description="Run the tests",
                        input=s.UnstructuredCommandInput(hint="test name or pattern"),
                    ),
                ]
            )
        )

    async def cmd_elicit(self, turn: Turn, rest: str) -> None:
        if not self.caps_elicitation_form():
            await turn.message("elicit: unsupported (client has no elicitation.form capability)")
            return
        request = s.ElicitationFormMode(
            message="Tell me about you",
            session_id=turn.session.session_id,
            requested_schema=s.ElicitationSchema(
                type="object",
                properties={
                    "name": s.StringPropertySchema(title="Name"),
                    "age": s.IntegerPropertySchema(title="Age", minimum=0),
                },
                required=["name", "age"],
            ),
        )
        try:
            response = await turn.call(lambda: self.client.create_elicitation(request))
        except RequestError as exc:
            turn.check()
            await turn.message(f"elicit: error {error_text(exc)}")
            return
        action = getattr(response, "tag", None) or type(response).__name__
        if isinstance(response, s.ElicitationAcceptAction):
            action = "accept"
            content = None if unset(response.content) else response.content
        elif isinstance(response, s.ElicitationDeclineAction):
            action, content = "decline", None
        elif isinstance(response, s.ElicitationCancelAction):
            action, content = "cancel", None
        else:
            content = None
        await turn.message(f"elicit: {action} {json.dumps(content, separators=(',', ':'))}")

    async def cmd_usage(self, turn: Turn, rest: str) -> None:
        await turn.update(
            s.UsageUpdate(used=100, size=1000, cost=s.Cost(amount=0.01, currency="USD"))
        )

    async def cmd_title(self, turn: Turn, rest: str) -> None:
        turn.session.title = rest
        turn.session.updated_at = now()
        await turn.update(s.SessionInfoUpdate(title=rest, updated_at=turn.session.updated_at))

    async def cmd_ext(self, turn: Turn, rest: str) -> None:
        try:
            result = await turn.call(lambda: self.client.ext_method("_acpwire/ping", {"n": 1}))
            text = json.dumps(result, separators=(",", ":"))
        except RequestError as exc:
            turn.check()
            text = str(exc.code)
        await turn.message(f"ext: {text}")
        await self.client.ext_notification("_acpwire/note", {"n": 2})

    async def cmd_meta(self, turn: Turn, rest: str) -> None:
        await turn.chunk(s.AgentMessageChunk, "meta", meta={"acpwire/test": {"nested": [1, 2]}})

    async def cmd_slow(self, turn: Turn, rest: str) -> None:
        if not await turn.sleep(SLOW_SECONDS):
            raise TurnCancelled()

    async def cmd_refuse(self, turn: Turn, rest: str) -> None:
        raise TurnStop("refusal")

    async def cmd_fail(self, turn: Turn, rest: str) -> None:
        raise InternalError("the fail command failed on purpose", {"command": "fail"})


def write_local(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def read_local(path: str, line: int | None, limit: int | None) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ResourceNotFound(f"Resource not found: {path}", {"path": path}) from None
    if line is None and limit is None:
        return text
    lines = text.split("\n")
    start = max((line or 1) - 1, 0)
    end = len(lines) if limit is None else start + limit
    return "\n".join(lines[start:end])


async def amain(wire_log: str | None) -> None:
    transport = RecordingTransport(await stdio_transport(), wire_log)
    await AgentSideConnection(PeerAgent(), transport).serve()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--wire-log", help="append both directions of the wire to this JSON-lines file"
    )
    opts = parser.parse_args()
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="[acpwire_agent] %(message)s"
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(amain(opts.wire_log))


if __name__ == "__main__":
    main()
