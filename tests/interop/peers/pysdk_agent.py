#!/usr/bin/env python3
"""Interop peer AGENT built on the official Python ACP SDK (``agent-client-protocol==0.12.1``).

Run it with the interpreter of the SDK's own venv (never the acpwire venv)::

    .cache/pysdk-venv/bin/python tests/interop/peers/pysdk_agent.py

It speaks ACP on stdin/stdout through ``acp.run_agent`` (unstable routes enabled
so ``session/resume``, ``session/close`` and ``session/fork`` are reachable) and
implements the prompt command language of ``tests/interop/PEERS.md``.  Logs go to
stderr only; stdout carries nothing but protocol frames.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as _dt
import json
import logging
import os
import shlex
import sys
import uuid
from dataclasses import dataclass, field
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, run_agent, text_block
from acp import schema as S

AGENT_NAME = "pysdk-peer-agent"
SDK_VERSION = "0.12.1"
SLOW_SECONDS = 600.0  # longer than any test waits: a lost cancel fails by timeout
# After session/cancel the running commands get this long to finish on their
# own (e.g. waiting for the client to answer a permission request `cancelled`)
# before they are aborted.
CANCEL_GRACE_SECONDS = 2.0
LIST_PAGE_SIZE = 2
OUTPUT_BYTE_LIMIT = 65536

MODES = [
    ("ask", "Ask", "Ask before changing anything"),
    ("code", "Code", "Edit files freely"),
]
MODEL_VALUES = [("fast", "Fast"), ("smart", "Smart")]

PERMISSION_OPTIONS = [
    ("allow", "Allow once", "allow_once"),
    ("always", "Always allow", "allow_always"),
    ("reject", "Reject", "reject_once"),
]
GRANTING_OPTIONS = {"allow", "always"}

log = logging.getLogger("pysdk_agent")


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat().replace("+00:00", "Z")


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


@dataclass
class Session:
    session_id: str
    cwd: str
    additional_directories: list[str] = field(default_factory=list)
    title: str | None = None
    updated_at: str = field(default_factory=_now)
    mode_id: str = "ask"
    model: str = "fast"
    history: list[Any] = field(default_factory=list)
    tool_counter: int = 0
    active: bool = True
    cancel_event: asyncio.Event | None = None
    turn_done: asyncio.Event | None = None

    def next_tool_id(self) -> str:
        self.tool_counter += 1
        return f"t{self.tool_counter}"

    @property
    def cancelled(self) -> bool:
        return self.cancel_event is not None and self.cancel_event.is_set()


class PeerAgent:
    """ACP agent implementing the PEERS.md command language on the SDK's Agent interface."""

    def __init__(self) -> None:
        self._conn: Any = None
        self._sessions: dict[str, Session] = {}
        self._client_caps = S.ClientCapabilities()

    # ------------------------------------------------------------------ wiring
    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    # ------------------------------------------------------- lifecycle methods
    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: S.ClientCapabilities | None = None,
        client_info: S.Implementation | None = None,
        **kwargs: Any,
    ) -> S.InitializeResponse:
        if client_capabilities is not None:
            self._client_caps = client_capabilities
        # Only version 1 is supported: echo it when asked for 1, otherwise answer 1.
        version = PROTOCOL_VERSION
        log.info(
            "initialize: client asked for %s, answering %s (client %s)",
            protocol_version,
            version,
            client_info,
        )
        return S.InitializeResponse(
            protocol_version=version,
            agent_capabilities=S.AgentCapabilities(
                load_session=True,
                # Only text blocks carry commands; other blocks are accepted and kept for replay.
                prompt_capabilities=S.PromptCapabilities(
                    image=True, audio=True, embedded_context=True
                ),
                mcp_capabilities=S.McpCapabilities(http=False, sse=False),
                session_capabilities=S.SessionCapabilities(
                    list=S.SessionListCapabilities(),
                    resume=S.SessionResumeCapabilities(),
                    close=S.SessionCloseCapabilities(),
                    additional_directories=S.SessionAdditionalDirectoriesCapabilities(),
                ),
                field_meta={
                    "acpwire/peer": {
                        "sdk": "python",
                        "sdkVersion": SDK_VERSION,
                        "commandLanguage": True,
                    }
                },
            ),
            auth_methods=[
                S.AuthMethodAgent(
                    id="token", name="Token", description="Accepts any client (test peer)"
                ),
            ],
            agent_info=S.Implementation(
                name=AGENT_NAME, title="Python SDK peer agent", version=SDK_VERSION
            ),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> S.AuthenticateResponse:
        if method_id != "token":
            raise RequestError.invalid_params({"details": f"unknown auth method {method_id!r}"})
        return S.AuthenticateResponse()

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> S.NewSessionResponse:
        self._check_abs(cwd, "cwd")
        for d in additional_directories or []:
            self._check_abs(d, "additionalDirectories")
        sess = Session(
            session_id=_new_id("pysess"),
            cwd=cwd,
            additional_directories=list(additional_directories or []),
        )
        self._sessions[sess.session_id] = sess
        return S.NewSessionResponse(
            session_id=sess.session_id,
            modes=self._modes(sess),
            config_options=self._config_options(sess),
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> S.LoadSessionResponse:
        sess = self._lookup(session_id)
        self._check_abs(cwd, "cwd")
        self._reopen(sess, cwd, additional_directories)
        for update in list(sess.history):
            await self._conn.session_update(session_id=sess.session_id, update=update)
        return S.LoadSessionResponse(
            modes=self._modes(sess), config_options=self._config_options(sess)
        )

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> S.ResumeSessionResponse:
        sess = self._lookup(session_id)
        self._check_abs(cwd, "cwd")
        self._reopen(sess, cwd, additional_directories)
        return S.ResumeSessionResponse(
            modes=self._modes(sess), config_options=self._config_options(sess)
        )

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> S.ForkSessionResponse:
        src = self._lookup(session_id)
        self._check_abs(cwd, "cwd")
        sess = Session(
            session_id=_new_id("pysess"),
            cwd=cwd,
            additional_directories=list(additional_directories or []),
            title=src.title,
            mode_id=src.mode_id,
            model=src.model,
            history=list(src.history),
            tool_counter=src.tool_counter,
        )
        self._sessions[sess.session_id] = sess
        return S.ForkSessionResponse(
            session_id=sess.session_id,
            modes=self._modes(sess),
            config_options=self._config_options(sess),
        )

    async def close_session(self, session_id: str, **kwargs: Any) -> S.CloseSessionResponse:
        sess = self._lookup(session_id)
        if sess.cancel_event is not None and sess.turn_done is not None:
            sess.cancel_event.set()
            await sess.turn_done.wait()
        sess.active = False
        return S.CloseSessionResponse()

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> S.ListSessionsResponse:
        matching = [s for s in self._sessions.values() if cwd is None or s.cwd == cwd]
        start = 0
        if cursor is not None:
            try:
                start = int(cursor)
            except ValueError:
                raise RequestError.invalid_params({"details": f"bad cursor {cursor!r}"}) from None
            if start < 0 or start > len(matching):
                raise RequestError.invalid_params({"details": f"bad cursor {cursor!r}"})
        page = matching[start : start + LIST_PAGE_SIZE]
        end = start + len(page)
        return S.ListSessionsResponse(
            sessions=[
                S.SessionInfo(
                    session_id=s.session_id,
                    cwd=s.cwd,
                    additional_directories=s.additional_directories or None,
                    title=s.title,
                    updated_at=s.updated_at,
                )
                for s in page
            ],
            next_cursor=str(end) if end < len(matching) else None,
        )

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> S.SetSessionModeResponse:
        sess = self._lookup(session_id)
        if mode_id not in {m[0] for m in MODES}:
            raise RequestError.invalid_params({"details": f"unknown mode {mode_id!r}"})
        sess.mode_id = mode_id
        return S.SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> S.SetSessionConfigOptionResponse:
        sess = self._lookup(session_id)
        if config_id != "model":
            raise RequestError.invalid_params({"details": f"unknown config option {config_id!r}"})
        if not isinstance(value, str) or value not in {v for v, _ in MODEL_VALUES}:
            raise RequestError.invalid_params({"details": f"invalid value {value!r} for model"})
        sess.model = value
        return S.SetSessionConfigOptionResponse(config_options=self._config_options(sess))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        sess = self._sessions.get(session_id)
        if sess is not None and sess.cancel_event is not None:
            sess.cancel_event.set()

    # ------------------------------------------------------------- extensions
    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "acpwire/echo":
            return params
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        print(
            f"pysdk_agent: extension notification _{method} {_compact(params)}",
            file=sys.stderr,
            flush=True,
        )

    # ------------------------------------------------------------------ prompt
    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> S.PromptResponse:
        sess = self._lookup(session_id)
        if not sess.active:
            raise RequestError(
                -32002,
                "Resource not found",
                {"sessionId": session_id, "details": "session is closed"},
            )
        if sess.turn_done is not None:
            raise RequestError.invalid_request(
                {"details": "a prompt turn is already running in this session"}
            )
        sess.cancel_event = asyncio.Event()
        sess.turn_done = asyncio.Event()
        sess.updated_at = _now()
        user_message_id = _new_id("msg")
        for block in prompt:
            sess.history.append(
                S.UserMessageChunk(
                    session_update="user_message_chunk", content=block, message_id=user_message_id
                )
            )
        text = "\n".join(b.text for b in prompt if getattr(b, "type", None) == "text")
        lines = [line.strip() for line in text.splitlines() if line.strip()]

        runner = asyncio.create_task(self._run_commands(sess, lines))
        cancel_wait = asyncio.create_task(sess.cancel_event.wait())
        try:
            done, _ = await asyncio.wait({runner, cancel_wait}, return_when=asyncio.FIRST_COMPLETED)
            if runner not in done:
                # Cancelled while commands run: let them wind down cooperatively,
                # then abort whatever is still outstanding.
                try:
                    await asyncio.wait_for(asyncio.shield(runner), CANCEL_GRACE_SECONDS)
                except asyncio.TimeoutError:
                    runner.cancel()
                with contextlib.suppress(BaseException):
                    await runner
                return S.PromptResponse(stop_reason="cancelled")
            stop_reason = runner.result()
            if sess.cancelled:
                stop_reason = "cancelled"
            return S.PromptResponse(stop_reason=stop_reason)
        finally:
            cancel_wait.cancel()
            if not runner.done():
                runner.cancel()
            sess.updated_at = _now()
            sess.turn_done.set()
            sess.cancel_event = None
            sess.turn_done = None

    async def _run_commands(self, sess: Session, lines: list[str]) -> str:
        for line in lines:
            if sess.cancelled:
                return "cancelled"
            word, _, rest = line.partition(" ")
            rest = rest.strip()
            handler = getattr(self, f"_cmd_{word.lower()}", None) if word.isalpha() else None
            if handler is None:
                await self._say(sess, f"unknown command: {line}")
                continue
            outcome = await handler(sess, rest)
            if outcome is not None:
                return outcome
        return "cancelled" if sess.cancelled else "end_turn"

    # --------------------------------------------------------------- commands
    async def _cmd_echo(self, sess: Session, rest: str) -> None:
        await self._say(sess, rest)

    async def _cmd_stream(self, sess: Session, rest: str) -> None:
        try:
            count = int(rest)
        except ValueError:
            await self._say(sess, f"unknown command: stream {rest}")
            return
        message_id = _new_id("msg")
        for i in range(count):
            await self._say(sess, f"chunk {i}", message_id=message_id)

    async def _cmd_think(self, sess: Session, rest: str) -> None:
        await self._send(
            sess,
            S.AgentThoughtChunk(
                session_update="agent_thought_chunk",
                content=text_block(rest),
                message_id=_new_id("msg"),
            ),
        )

    async def _cmd_user(self, sess: Session, rest: str) -> None:
        await self._send(
            sess,
            S.UserMessageChunk(
                session_update="user_message_chunk",
                content=text_block(rest),
                message_id=_new_id("msg"),
            ),
            record=True,
        )

    async def _cmd_plan(self, sess: Session, rest: str) -> None:
        await self._send(
            sess,
            S.AgentPlanUpdate(
                session_update="plan",
                entries=[
                    S.PlanEntry(
                        content="Investigate the request", priority="high", status="pending"
                    ),
                    S.PlanEntry(content="Make the change", priority="medium", status="in_progress"),
                    S.PlanEntry(content="Say hello", priority="low", status="completed"),
                ],
            ),
        )

    async def _cmd_tool(self, sess: Session, rest: str) -> None:
        tid = sess.next_tool_id()
        await self._tool_start(sess, tid, "Test tool", "other")
        await self._tool_update(sess, tid, status="in_progress")
        await self._tool_update(
            sess,
            tid,
            status="completed",
            content=[S.ContentToolCallContent(type="content", content=text_block("tool done"))],
            raw_output={"ok": True},
        )

    async def _cmd_read(self, sess: Session, rest: str) -> None:
        parts = rest.split()
        if not parts:
            await self._say(sess, "unknown command: read")
            return
        path = _resolve(sess, parts[0])
        try:
            line = int(parts[1]) if len(parts) > 1 else None
            limit = int(parts[2]) if len(parts) > 2 else None
        except ValueError:
            await self._say(sess, f"unknown command: read {rest}")
            return
        tid = sess.next_tool_id()
        await self._tool_start(
            sess,
            tid,
            f"Read {path}",
            "read",
            locations=[S.ToolCallLocation(path=path, line=line)],
            raw_input={"path": path, "line": line, "limit": limit},
        )
        try:
            if self._caps_fs("read"):
                resp = await self._conn.read_text_file(
                    session_id=sess.session_id, path=path, line=line, limit=limit
                )
                content = resp.content
            else:
                content = _read_local(path, line, limit)
        except (RequestError, OSError, UnicodeDecodeError) as exc:
            await self._tool_update(sess, tid, status="failed")
            await self._say(sess, f"read error: {_describe(exc)}")
            return
        await self._say(sess, content)
        await self._tool_update(
            sess,
            tid,
            status="completed",
            content=[S.ContentToolCallContent(type="content", content=text_block(content))],
        )

    async def _cmd_write(self, sess: Session, rest: str) -> None:
        path, _, text = rest.partition(" ")
        if not path:
            await self._say(sess, "unknown command: write")
            return
        path = _resolve(sess, path)
        old_text: str | None
        try:
            old_text = _read_local(path, None, None)
        except (OSError, UnicodeDecodeError):
            old_text = None
        tid = sess.next_tool_id()
        await self._tool_start(
            sess,
            tid,
            f"Write {path}",
            "edit",
            content=[
                S.FileEditToolCallContent(type="diff", path=path, old_text=old_text, new_text=text)
            ],
            locations=[S.ToolCallLocation(path=path)],
            raw_input={"path": path, "content": text},
        )
        choice = await self._ask_permission(sess, tid, f"Write {path}", "edit")
        if choice in GRANTING_OPTIONS:
            await self._tool_update(sess, tid, status="in_progress")
            try:
                if self._caps_fs("write"):
                    await self._conn.write_text_file(
                        session_id=sess.session_id, path=path, content=text
                    )
                else:
                    _write_local(path, text)
            except (RequestError, OSError) as exc:
                await self._tool_update(sess, tid, status="failed")
                await self._say(sess, f"write error: {_describe(exc)}")
            else:
                await self._tool_update(sess, tid, status="completed")
        else:
            await self._tool_update(sess, tid, status="failed")
        await self._say(sess, f"permission: {choice}")

    async def _cmd_run(self, sess: Session, rest: str) -> None:
        await self._execute(sess, rest, kill=False)

    async def _cmd_kill(self, sess: Session, rest: str) -> None:
        await self._execute(sess, rest, kill=True)

    async def _cmd_permission(self, sess: Session, rest: str) -> None:
        tid = sess.next_tool_id()
        choice = await self._ask_permission(sess, tid, "Permission check", "other")
        await self._say(sess, f"permission: {choice}")

    async def _cmd_mode(self, sess: Session, rest: str) -> None:
        if rest in {m[0] for m in MODES}:
            sess.mode_id = rest
        await self._send(
            sess, S.CurrentModeUpdate(session_update="current_mode_update", current_mode_id=rest)
        )

    async def _cmd_config(self, sess: Session, rest: str) -> None:
        await self._send(
            sess,
            S.ConfigOptionUpdate(
                session_update="config_option_update", config_options=self._config_options(sess)
            ),
        )

    async def _cmd_commands(self, sess: Session, rest: str) -> None:
        await self._send(
            sess,
            S.AvailableCommandsUpdate(
                session_update="available_commands_update",
                available_commands=[
                    S.AvailableCommand(name="help", description="Show the command language"),
                    S.AvailableCommand(
                        name="test",
                        description="Run the test suite",
                        input=S.UnstructuredCommandInput(hint="test name to run"),
                    ),
                ],
            ),
        )

    async def _cmd_elicit(self, sess: Session, rest: str) -> None:
        elicitation = self._client_caps.elicitation
        if elicitation is None or elicitation.form is None:
            await self._say(sess, "elicit: unsupported (client did not advertise elicitation.form)")
            return
        mode = S.ElicitationFormSessionMode(
            session_id=sess.session_id,
            requested_schema=S.ElicitationSchema(
                type="object",
                title="About you",
                properties={
                    "name": S.ElicitationStringPropertySchema(type="string", title="Name"),
                    "age": S.ElicitationIntegerPropertySchema(
                        type="integer", title="Age", minimum=0
                    ),
                },
                required=["name", "age"],
            ),
        )
        try:
            resp = await self._conn.create_elicitation(
                message="Please tell me about yourself", mode=mode
            )
        except RequestError as exc:
            await self._say(sess, f"elicit: error {exc.code}")
            return
        content = getattr(resp, "content", None)
        await self._say(sess, f"elicit: {resp.action} {_compact(content)}")

    async def _cmd_usage(self, sess: Session, rest: str) -> None:
        await self._send(
            sess,
            S.UsageUpdate(
                session_update="usage_update",
                used=100,
                size=1000,
                cost=S.Cost(amount=0.01, currency="USD"),
            ),
        )

    async def _cmd_title(self, sess: Session, rest: str) -> None:
        sess.title = rest
        sess.updated_at = _now()
        await self._send(
            sess,
            S.SessionInfoUpdate(
                session_update="session_info_update", title=rest, updated_at=sess.updated_at
            ),
        )

    async def _cmd_ext(self, sess: Session, rest: str) -> None:
        try:
            result = await self._conn.ext_method("acpwire/ping", {"n": 1})
            text = f"ext: {_compact(result)}"
        except RequestError as exc:
            text = f"ext: {exc.code}"
        await self._conn.ext_notification("acpwire/note", {"n": 2})
        await self._say(sess, text)

    async def _cmd_meta(self, sess: Session, rest: str) -> None:
        await self._send(
            sess,
            S.AgentMessageChunk(
                session_update="agent_message_chunk",
                content=text_block("meta"),
                message_id=_new_id("msg"),
                field_meta={"acpwire/test": {"nested": [1, 2]}},
            ),
            record=True,
        )

    async def _cmd_slow(self, sess: Session, rest: str) -> str | None:
        seconds = SLOW_SECONDS
        if rest:
            with contextlib.suppress(ValueError):
                seconds = min(float(rest), SLOW_SECONDS)
        assert sess.cancel_event is not None
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(sess.cancel_event.wait(), seconds)
        return "cancelled" if sess.cancelled else None

    async def _cmd_refuse(self, sess: Session, rest: str) -> str:
        return "refusal"

    async def _cmd_fail(self, sess: Session, rest: str) -> None:
        raise RequestError.internal_error({"details": "fail command"})

    # ----------------------------------------------------------- run / kill
    async def _execute(self, sess: Session, rest: str, *, kill: bool) -> None:
        try:
            argv = shlex.split(rest)
        except ValueError:
            argv = rest.split()
        if not argv:
            await self._say(sess, f"unknown command: {'kill' if kill else 'run'}")
            return
        command, args = argv[0], argv[1:]
        tid = sess.next_tool_id()
        title = f"{'Kill' if kill else 'Run'} {rest}"
        await self._tool_start(
            sess, tid, title, "execute", raw_input={"command": command, "args": args}
        )
        choice = await self._ask_permission(sess, tid, title, "execute")
        if choice not in GRANTING_OPTIONS or sess.cancelled:
            await self._tool_update(sess, tid, status="failed")
            await self._say(sess, f"permission: {choice}")
            return
        if not self._client_caps.terminal:
            # Never call terminal/* without the capability.
            await self._tool_update(sess, tid, status="failed")
            await self._say(sess, f"permission: {choice}")
            await self._say(
                sess, f"{'kill' if kill else 'run'} failed: client has no terminal capability"
            )
            return
        await self._say(sess, f"permission: {choice}")
        await self._execute_terminal(sess, tid, command, args, kill=kill)

    async def _execute_terminal(
        self, sess: Session, tid: str, command: str, args: list[str], *, kill: bool
    ) -> None:
        conn, sid = self._conn, sess.session_id
        try:
            created = await conn.create_terminal(
                session_id=sid,
                command=command,
                args=args,
                cwd=sess.cwd,
                output_byte_limit=OUTPUT_BYTE_LIMIT,
            )
        except RequestError as exc:
            await self._tool_update(sess, tid, status="failed")
            await self._say(sess, f"terminal error: {_describe(exc)}")
            return
        term_id = created.terminal_id
        await self._tool_update(
            sess,
            tid,
            status="in_progress",
            content=[S.TerminalToolCallContent(type="terminal", terminal_id=term_id)],
        )
        try:
            if kill:
                await conn.kill_terminal(session_id=sid, terminal_id=term_id)
            waiter = asyncio.create_task(
                conn.wait_for_terminal_exit(session_id=sid, terminal_id=term_id)
            )
            assert sess.cancel_event is not None
            cancelled = asyncio.create_task(sess.cancel_event.wait())
            try:
                await asyncio.wait({waiter, cancelled}, return_when=asyncio.FIRST_COMPLETED)
                if not waiter.done():
                    # Turn cancelled while the command runs: stop it, then finish the protocol dance.
                    await conn.kill_terminal(session_id=sid, terminal_id=term_id)
                exit_status = await waiter
            finally:
                cancelled.cancel()
            output = await conn.terminal_output(session_id=sid, terminal_id=term_id)
        except RequestError as exc:
            with contextlib.suppress(Exception):
                await conn.release_terminal(session_id=sid, terminal_id=term_id)
            await self._tool_update(sess, tid, status="failed")
            await self._say(sess, f"terminal error: {_describe(exc)}")
            return
        await conn.release_terminal(session_id=sid, terminal_id=term_id)
        code = exit_status.exit_code if exit_status.exit_code is not None else exit_status.signal
        status = "completed" if exit_status.exit_code == 0 else "failed"
        await self._tool_update(
            sess,
            tid,
            status=status,
            raw_output={"exitCode": exit_status.exit_code, "signal": exit_status.signal},
        )
        if kill:
            await self._say(
                sess,
                f"killed: {exit_status.signal if exit_status.signal is not None else exit_status.exit_code}",
            )
        else:
            await self._say(sess, f"exit: {code} output: {output.output.rstrip()}")

    # ---------------------------------------------------------------- helpers
    async def _ask_permission(self, sess: Session, tid: str, title: str, kind: str) -> str:
        try:
            resp = await self._conn.request_permission(
                session_id=sess.session_id,
                tool_call=S.ToolCallUpdate(
                    tool_call_id=tid, title=title, kind=kind, status="pending"
                ),
                options=[
                    S.PermissionOption(option_id=o, name=n, kind=k)
                    for o, n, k in PERMISSION_OPTIONS
                ],
            )
        except RequestError as exc:
            return f"error {exc.code}"
        outcome = resp.outcome
        if isinstance(outcome, S.AllowedOutcome) or getattr(outcome, "outcome", None) == "selected":
            return outcome.option_id
        return "cancelled"

    async def _say(self, sess: Session, text: str, *, message_id: str | None = None) -> None:
        await self._send(
            sess,
            S.AgentMessageChunk(
                session_update="agent_message_chunk",
                content=text_block(text),
                message_id=message_id or _new_id("msg"),
            ),
            record=True,
        )

    async def _send(self, sess: Session, update: Any, *, record: bool = False) -> None:
        if record:
            sess.history.append(update)
        await self._conn.session_update(session_id=sess.session_id, update=update)

    async def _tool_start(
        self, sess: Session, tid: str, title: str, kind: str, **fields: Any
    ) -> None:
        await self._send(
            sess,
            S.ToolCallStart(
                session_update="tool_call",
                tool_call_id=tid,
                title=title,
                kind=kind,
                status="pending",
                **fields,
            ),
        )

    async def _tool_update(self, sess: Session, tid: str, **fields: Any) -> None:
        await self._send(
            sess, S.ToolCallProgress(session_update="tool_call_update", tool_call_id=tid, **fields)
        )

    def _caps_fs(self, which: str) -> bool:
        fs = self._client_caps.fs
        if fs is None:
            return False
        return bool(fs.read_text_file if which == "read" else fs.write_text_file)

    def _lookup(self, session_id: str) -> Session:
        sess = self._sessions.get(session_id)
        if sess is None:
            raise RequestError(
                -32002,
                "Resource not found",
                {"sessionId": session_id, "details": "unknown session"},
            )
        return sess

    @staticmethod
    def _check_abs(path: str, what: str) -> None:
        if not os.path.isabs(path):
            raise RequestError.invalid_params(
                {"details": f"{what} must be an absolute path: {path!r}"}
            )

    def _reopen(self, sess: Session, cwd: str, additional_directories: list[str] | None) -> None:
        sess.cwd = cwd
        if additional_directories is not None:
            sess.additional_directories = list(additional_directories)
        sess.active = True

    @staticmethod
    def _modes(sess: Session) -> S.SessionModeState:
        return S.SessionModeState(
            current_mode_id=sess.mode_id,
            available_modes=[S.SessionMode(id=i, name=n, description=d) for i, n, d in MODES],
        )

    @staticmethod
    def _config_options(sess: Session) -> list[Any]:
        return [
            S.SessionConfigOptionSelect(
                type="select",
                id="model",
                name="Model",
                description="Which model answers",
                category="model",
                current_value=sess.model,
                options=[S.SessionConfigSelectOption(value=v, name=n) for v, n in MODEL_VALUES],
            )
        ]


def _read_local(path: str, line: int | None, limit: int | None) -> str:
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    if line is None and limit is None:
        return text
    lines = text.split("\n")
    start = max((line or 1) - 1, 0)
    end = None if limit is None else start + max(limit, 0)
    return "\n".join(lines[start:end])


def _write_local(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def _resolve(sess: Session, path: str) -> str:
    """Relative paths in commands are taken relative to the session's cwd."""
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(sess.cwd, path))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, RequestError):
        return f"{exc.code} {exc}"
    return f"{type(exc).__name__}: {exc}"


async def _main() -> None:
    await run_agent(PeerAgent(), use_unstable_protocol=True)


def main() -> None:
    logging.basicConfig(
        stream=sys.stderr, level=os.environ.get("PYSDK_PEER_LOG", "WARNING").upper()
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_main())


if __name__ == "__main__":
    main()
