"""A small agent (low-tier ``Agent``) that exercises every client method, for the toolkit tests.

Used in-process over ``memory_pair()`` and as a subprocess (``python toolkit_agent.py``).
Each prompt is a command:

``echo TEXT``            reply TEXT in two chunks of one message
``read PATH``            tool call (read) + fs/read_text_file; replies the content
``write PATH TEXT``      tool call (edit) + permission + fs/write_text_file
``run CMD ARG...``       tool call (execute) + terminal create/wait/output/release
``keep CMD ARG...``      creates a terminal and leaves it running; replies its id
``permission``           asks permission; replies the outcome (ends ``cancelled`` if cancelled)
``elicit form|url``      elicitation/create; replies the action (and content)
``plan``                 two plan updates
``slow``                 streams until cancelled
``late-permission``      asks permission after the turn was cancelled
``update-first``         a tool_call_update before its tool_call

Command-line flags for the subprocess tests: ``--crash-on-initialize`` (write to stderr
and exit 3 when asked to initialize), ``--protocol-version N`` (answer with N).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from typing import Any

from acpwire import schema as s
from acpwire.agent.connection import Agent, run_agent
from acpwire.protocol.errors import RequestError, ResourceNotFound
from acpwire.protocol.version import negotiate

MODES = s.SessionModeState(
    current_mode_id="ask",
    available_modes=[s.SessionMode(id="ask", name="Ask"), s.SessionMode(id="code", name="Code")],
)


def model_option(current: str = "fast") -> s.SessionConfigSelect:
    return s.SessionConfigSelect(
        id="model",
        name="Model",
        category="model",
        current_value=current,
        options=[
            s.SessionConfigSelectOption(value="fast", name="Fast"),
            s.SessionConfigSelectOption(value="smart", name="Smart"),
        ],
    )


class _Session:
    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self.history: list[s.SessionUpdate] = []
        self.cancelled = asyncio.Event()
        self.model = "fast"


class ToolkitTestAgent(Agent):
    def __init__(
        self, *, protocol_version: int | None = None, crash_on_initialize: bool = False
    ) -> None:
        self.sessions: dict[str, _Session] = {}
        self.protocol_version = protocol_version
        self.crash_on_initialize = crash_on_initialize
        self.calls = 0

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        if self.crash_on_initialize:
            print("toolkit agent: simulated crash during initialize", file=sys.stderr, flush=True)
            os._exit(3)
        version = self.protocol_version or negotiate(params.protocol_version)
        return s.InitializeResponse(
            protocol_version=version,
            agent_capabilities=s.AgentCapabilities(
                load_session=True,
                session_capabilities=s.SessionCapabilities(
                    list=s.SessionListCapabilities(),
                    resume=s.SessionResumeCapabilities(),
                    close=s.SessionCloseCapabilities(),
                    delete=s.SessionDeleteCapabilities(),
                    additional_directories=s.SessionAdditionalDirectoriesCapabilities(),
                ),
            ),
            agent_info=s.Implementation(name="toolkit-test-agent", version="1"),
        )

    # -- sessions ----------------------------------------------------------

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        session_id = f"sess_{uuid.uuid4().hex[:12]}"
        self.sessions[session_id] = _Session(params.cwd)
        return s.NewSessionResponse(
            session_id=session_id, modes=MODES, config_options=[model_option()]
        )

    def _session(self, session_id: str) -> _Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise ResourceNotFound("unknown session", {"sessionId": session_id})
        return session

    async def load_session(self, params: s.LoadSessionRequest) -> s.LoadSessionResponse:
        session = self._session(params.session_id)
        for update in session.history:
            await self.client.session_update(params.session_id, update)
        return s.LoadSessionResponse(modes=MODES, config_options=[model_option(session.model)])

    async def resume_session(self, params: s.ResumeSessionRequest) -> s.ResumeSessionResponse:
        session = self._session(params.session_id)
        return s.ResumeSessionResponse(modes=MODES, config_options=[model_option(session.model)])

    async def list_sessions(self, params: s.ListSessionsRequest) -> s.ListSessionsResponse:
        ids = sorted(self.sessions)
        start = int(params.cursor) if isinstance(params.cursor, str) else 0
        page = ids[start : start + 1]
        next_cursor = str(start + 1) if start + 1 < len(ids) else s.UNSET
        return s.ListSessionsResponse(
            sessions=[s.SessionInfo(session_id=i, cwd=self.sessions[i].cwd) for i in page],
            next_cursor=next_cursor,
        )

    async def close_session(self, params: s.CloseSessionRequest) -> s.CloseSessionResponse:
        self._session(params.session_id).cancelled.set()
        return s.CloseSessionResponse()

    async def delete_session(self, params: s.DeleteSessionRequest) -> s.DeleteSessionResponse:
        self.sessions.pop(params.session_id, None)
        return s.DeleteSessionResponse()

    async def set_session_mode(self, params: s.SetSessionModeRequest) -> s.SetSessionModeResponse:
        return s.SetSessionModeResponse()

    async def set_session_config_option(
        self, params: s.SetSessionConfigOptionRequest
    ) -> s.SetSessionConfigOptionResponse:
        session = self._session(params.session_id)
        session.model = str(params.value)
        return s.SetSessionConfigOptionResponse(config_options=[model_option(session.model)])

    async def cancel(self, params: s.CancelNotification) -> None:
        session = self.sessions.get(params.session_id)
        if session is not None:
            session.cancelled.set()

    # -- turns -------------------------------------------------------------

    async def _send(self, session_id: str, update: s.SessionUpdate) -> None:
        self.sessions[session_id].history.append(update)
        await self.client.session_update(session_id, update)

    async def _say(self, session_id: str, *parts: str) -> None:
        message_id = f"msg_{uuid.uuid4().hex[:8]}"
        for part in parts:
            await self._send(
                session_id,
                s.AgentMessageChunk(content=s.TextContent(text=part), message_id=message_id),
            )

    def _tool_id(self) -> str:
        self.calls += 1
        return f"call_{self.calls}"

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        session_id = params.session_id
        session = self._session(session_id)
        session.cancelled.clear()
        text = "".join(b.text for b in params.prompt if isinstance(b, s.TextContent))
        # The user's message is only replayed by session/load, never echoed live.
        session.history.append(
            s.UserMessageChunk(
                content=s.TextContent(text=text), message_id=f"u_{uuid.uuid4().hex[:8]}"
            )
        )
        command, _, rest = text.partition(" ")
        handler = getattr(self, f"_cmd_{command.replace('-', '_')}", None)
        if handler is None:
            await self._say(session_id, f"unknown command {command!r}")
            return s.PromptResponse(stop_reason="end_turn")
        stop: str = await handler(session_id, rest)
        return s.PromptResponse(stop_reason=stop)

    async def _cmd_echo(self, session_id: str, rest: str) -> str:
        half = len(rest) // 2
        await self._say(session_id, rest[:half], rest[half:])
        return "end_turn"

    async def _cmd_read(self, session_id: str, path: str) -> str:
        call = self._tool_id()
        await self._send(
            session_id,
            s.ToolCallStart(
                tool_call_id=call,
                title=f"Read {path}",
                kind="read",
                status="pending",
                locations=[s.ToolCallLocation(path=path)],
            ),
        )
        try:
            result = await self.client.read_text_file(session_id, path)
        except RequestError as exc:
            await self._send(session_id, s.ToolCallProgress(tool_call_id=call, status="failed"))
            await self._say(session_id, f"error {exc.code}: {exc.message}")
            return "end_turn"
        await self._send(
            session_id,
            s.ToolCallProgress(
                tool_call_id=call,
                status="completed",
                content=[s.Content(content=s.TextContent(text=result.content))],
            ),
        )
        await self._say(session_id, result.content)
        return "end_turn"

    async def _ask(self, session_id: str, call: s.ToolCallUpdate) -> s.RequestPermissionResponse:
        return await self.client.request_permission(
            session_id,
            call,
            [
                s.PermissionOption(option_id="allow-once", name="Allow", kind="allow_once"),
                s.PermissionOption(
                    option_id="allow-always", name="Always allow", kind="allow_always"
                ),
                s.PermissionOption(option_id="reject-once", name="Reject", kind="reject_once"),
            ],
        )

    async def _cmd_write(self, session_id: str, rest: str) -> str:
        path, _, content = rest.partition(" ")
        call = self._tool_id()
        await self._send(
            session_id,
            s.ToolCallStart(
                tool_call_id=call,
                title=f"Write {path}",
                kind="edit",
                status="pending",
                locations=[s.ToolCallLocation(path=path)],
            ),
        )
        answer = await self._ask(session_id, s.ToolCallUpdate(tool_call_id=call))
        outcome = answer.outcome
        if not (
            isinstance(outcome, s.SelectedPermissionOutcome)
            and outcome.option_id.startswith("allow")
        ):
            await self._send(session_id, s.ToolCallProgress(tool_call_id=call, status="failed"))
            await self._say(session_id, "write refused")
            return "cancelled" if isinstance(outcome, s.CancelledPermissionOutcome) else "end_turn"
        await self._send(session_id, s.ToolCallProgress(tool_call_id=call, status="in_progress"))
        try:
            await self.client.write_text_file(session_id, path, content)
        except RequestError as exc:
            await self._send(session_id, s.ToolCallProgress(tool_call_id=call, status="failed"))
            await self._say(session_id, f"error {exc.code}: {exc.message}")
            return "end_turn"
        await self._send(
            session_id,
            s.ToolCallProgress(
                tool_call_id=call,
                status="completed",
                content=[s.Diff(path=path, old_text=None, new_text=content)],
            ),
        )
        await self._say(session_id, f"wrote {path}")
        return "end_turn"

    async def _cmd_run(self, session_id: str, rest: str) -> str:
        argv = rest.split()
        call = self._tool_id()
        await self._send(
            session_id,
            s.ToolCallStart(
                tool_call_id=call, title=f"Run {rest}", kind="execute", status="pending"
            ),
        )
        created = await self.client.create_terminal(
            session_id, argv[0], argv[1:], env={"TOOLKIT_TEST": "from-agent"}
        )
        terminal_id = created.terminal_id
        await self._send(
            session_id,
            s.ToolCallProgress(
                tool_call_id=call,
                status="in_progress",
                content=[s.Terminal(terminal_id=terminal_id)],
            ),
        )
        status = await self.client.wait_for_terminal_exit(session_id, terminal_id)
        output = await self.client.terminal_output(session_id, terminal_id)
        await self.client.release_terminal(session_id, terminal_id)
        ok = status.exit_code == 0
        await self._send(
            session_id,
            s.ToolCallProgress(tool_call_id=call, status="completed" if ok else "failed"),
        )
        await self._say(session_id, f"exit {status.exit_code}: {output.output}")
        return "end_turn"

    async def _cmd_keep(self, session_id: str, rest: str) -> str:
        argv = rest.split()
        created = await self.client.create_terminal(session_id, argv[0], argv[1:])
        await self._say(session_id, created.terminal_id)
        return "end_turn"

    async def _cmd_permission(self, session_id: str, rest: str) -> str:
        call = self._tool_id()
        await self._send(
            session_id,
            s.ToolCallStart(
                tool_call_id=call, title="Delete /tmp/x", kind="delete", status="pending"
            ),
        )
        answer = await self._ask(session_id, s.ToolCallUpdate(tool_call_id=call))
        outcome = answer.outcome
        if isinstance(outcome, s.SelectedPermissionOutcome):
            await self._say(session_id, f"selected {outcome.option_id}")
            return "end_turn"
        await self._send(session_id, s.ToolCallProgress(tool_call_id=call, status="failed"))
        await self._say(session_id, "cancelled")
        return "cancelled" if self.sessions[session_id].cancelled.is_set() else "end_turn"

    async def _cmd_late_permission(self, session_id: str, rest: str) -> str:
        """Asks permission only after the turn was cancelled."""
        await self._say(session_id, "waiting")
        await self.sessions[session_id].cancelled.wait()
        call = self._tool_id()
        await self._send(session_id, s.ToolCallStart(tool_call_id=call, title="Late", kind="edit"))
        outcome = (await self._ask(session_id, s.ToolCallUpdate(tool_call_id=call))).outcome
        chosen = (
            outcome.option_id if isinstance(outcome, s.SelectedPermissionOutcome) else "cancelled"
        )
        await self._say(session_id, chosen)
        return "cancelled"

    async def _cmd_elicit(self, session_id: str, mode: str) -> str:
        params: s.CreateElicitationRequest
        if mode == "form":
            params = s.ElicitationFormMode(
                session_id=session_id,
                message="Who are you?",
                requested_schema=s.ElicitationSchema(
                    type="object",
                    properties={
                        "name": s.StringPropertySchema(title="Name", min_length=1),
                        "count": s.IntegerPropertySchema(minimum=1, default=2),
                    },
                    required=["name"],
                ),
            )
        else:
            params = s.ElicitationUrlMode(
                session_id=session_id,
                message="Connect your account",
                elicitation_id="eli_1",
                url="https://example.com/connect?x=1",
            )
        answer = await self.client.create_elicitation(params)
        content: Any = getattr(answer, "content", None)
        action = type(answer).__name__
        if mode == "url" and isinstance(answer, s.ElicitationAcceptAction):
            await self.client.complete_elicitation("eli_1")
            await self.client.complete_elicitation("eli_1")  # a repeat must be ignored
        await self._say(
            session_id,
            f"{action} {json.dumps(content) if isinstance(content, dict) else ''}".strip(),
        )
        return "end_turn"

    async def _cmd_plan(self, session_id: str, rest: str) -> str:
        first = [
            s.PlanEntry(content="Look", priority="high", status="in_progress"),
            s.PlanEntry(content="Fix", priority="medium", status="pending"),
        ]
        await self._send(session_id, s.PlanUpdate(entries=first))
        done = [
            s.PlanEntry(content=e.content, priority=e.priority, status="completed") for e in first
        ]
        await self._send(session_id, s.PlanUpdate(entries=done))
        await self._say(session_id, "planned")
        return "end_turn"

    async def _cmd_slow(self, session_id: str, rest: str) -> str:
        session = self.sessions[session_id]
        message_id = f"msg_{uuid.uuid4().hex[:8]}"
        await self._send(
            session_id,
            s.AgentMessageChunk(content=s.TextContent(text="working"), message_id=message_id),
        )
        await session.cancelled.wait()
        return "cancelled"

    async def _cmd_update_first(self, session_id: str, rest: str) -> str:
        await self._send(session_id, s.ToolCallProgress(tool_call_id="early", status="in_progress"))
        await self._send(
            session_id, s.ToolCallStart(tool_call_id="early", title="Early bird", status="pending")
        )
        await self._send(session_id, s.ToolCallProgress(tool_call_id="early", status="completed"))
        return "end_turn"


def main() -> None:
    args = sys.argv[1:]
    version = None
    if "--protocol-version" in args:
        version = int(args[args.index("--protocol-version") + 1])
    agent = ToolkitTestAgent(
        protocol_version=version, crash_on_initialize="--crash-on-initialize" in args
    )
    run_agent(agent)


if __name__ == "__main__":
    main()
