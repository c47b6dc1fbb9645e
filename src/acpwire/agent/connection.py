"""The agent role, low tier: one handler method per client->agent method, and a
typed peer for calling the client.

Subclass :class:`Agent`, override the methods you support (the rest answer
``-32601``), and serve it with :func:`serve_stdio` or
:class:`AgentSideConnection`. The method names come from the method table
(:mod:`acpwire.schema.methods`); a test checks that they match it.

Interrupting a stdio agent: clients such as ``acpx exec`` leave the agent in
the terminal's process group, so Ctrl-C reaches the agent as SIGINT together
with ``session/cancel``. A stdio agent served by :func:`serve_stdio` (and so
:func:`run_agent` and ``AgentApp.run``) then does what ``session/cancel``
does for every prompt still running, gives their answers (``cancelled``) up
to :data:`INTERRUPT_GRACE` seconds to go out, closes the connection and
returns; the program exits 0. A second SIGINT stops at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .. import schema as s
from ..engine.connection import Connection
from ..engine.roles import Peer, build_router
from ..protocol.errors import MethodNotFound
from ..protocol.version import negotiate
from ..schema import UNSET, UnsetType
from ..transports.base import Transport

log = logging.getLogger("acpwire.agent")

INTERRUPT_GRACE = 5.0
"""Seconds the cancelled turns have, after an interrupt, to answer before the connection closes."""


class Agent:
    """Handler base for the agent role. Every method receives the decoded params model."""

    client: ClientPeer
    """The connected client; set when a connection adopts this agent."""

    def on_connect(self, client: ClientPeer) -> None:
        """Called once when a connection starts serving this agent."""
        self.client = client

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        """Negotiates the version; override to advertise capabilities and auth methods."""
        return s.InitializeResponse(protocol_version=negotiate(params.protocol_version))

    async def authenticate(self, params: s.AuthenticateRequest) -> s.AuthenticateResponse | None:
        raise MethodNotFound("authenticate is not supported by this agent")

    async def logout(self, params: s.LogoutRequest) -> s.LogoutResponse | None:
        raise MethodNotFound("logout is not supported by this agent")

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        raise MethodNotFound("session/new is not supported by this agent")

    async def load_session(self, params: s.LoadSessionRequest) -> s.LoadSessionResponse | None:
        raise MethodNotFound("session/load is not supported by this agent")

    async def list_sessions(self, params: s.ListSessionsRequest) -> s.ListSessionsResponse:
        raise MethodNotFound("session/list is not supported by this agent")

    async def delete_session(
        self, params: s.DeleteSessionRequest
    ) -> s.DeleteSessionResponse | None:
        raise MethodNotFound("session/delete is not supported by this agent")

    async def resume_session(
        self, params: s.ResumeSessionRequest
    ) -> s.ResumeSessionResponse | None:
        raise MethodNotFound("session/resume is not supported by this agent")

    async def close_session(self, params: s.CloseSessionRequest) -> s.CloseSessionResponse | None:
        raise MethodNotFound("session/close is not supported by this agent")

    async def set_session_mode(
        self, params: s.SetSessionModeRequest
    ) -> s.SetSessionModeResponse | None:
        raise MethodNotFound("session/set_mode is not supported by this agent")

    async def set_session_config_option(
        self, params: s.SetSessionConfigOptionRequest
    ) -> s.SetSessionConfigOptionResponse:
        raise MethodNotFound("session/set_config_option is not supported by this agent")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        raise MethodNotFound("session/prompt is not supported by this agent")

    async def cancel(self, params: s.CancelNotification) -> None:
        """``session/cancel``: stop the session's running turn (it must answer ``cancelled``)."""

    async def ext_method(self, method: str, params: Any) -> Any:
        """An ``_``-prefixed request; unknown ones answer ``-32601``."""
        raise MethodNotFound(f"Method not found: {method}", {"method": method})

    async def ext_notification(self, method: str, params: Any) -> None:
        """An ``_``-prefixed notification; ignored unless overridden."""


class ClientPeer(Peer):
    """The client, as the agent calls it. Gated methods check the client's capabilities first."""

    client_info: s.Implementation | None = None

    async def session_update(
        self, session_id: str, update: s.SessionUpdate, *, meta: dict[str, Any] | UnsetType = UNSET
    ) -> None:
        await self.connection.notify(
            "session/update", s.SessionNotification(session_id=session_id, update=update, meta=meta)
        )

    async def request_permission(
        self,
        session_id: str,
        tool_call: s.ToolCallUpdate,
        options: Sequence[s.PermissionOption],
    ) -> s.RequestPermissionResponse:
        params = s.RequestPermissionRequest(
            session_id=session_id, tool_call=tool_call, options=list(options)
        )
        result: s.RequestPermissionResponse = await self._call("session/request_permission", params)
        return result

    async def read_text_file(
        self, session_id: str, path: str, *, line: int | None = None, limit: int | None = None
    ) -> s.ReadTextFileResponse:
        params = s.ReadTextFileRequest(
            session_id=session_id,
            path=path,
            line=UNSET if line is None else line,
            limit=UNSET if limit is None else limit,
        )
        result: s.ReadTextFileResponse = await self._call("fs/read_text_file", params)
        return result

    async def write_text_file(
        self, session_id: str, path: str, content: str
    ) -> s.WriteTextFileResponse:
        params = s.WriteTextFileRequest(session_id=session_id, path=path, content=content)
        result: s.WriteTextFileResponse = await self._call("fs/write_text_file", params)
        return result

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: Sequence[str] = (),
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
    ) -> s.CreateTerminalResponse:
        params = s.CreateTerminalRequest(
            session_id=session_id,
            command=command,
            args=list(args),
            env=[s.EnvVariable(name=k, value=v) for k, v in (env or {}).items()],
            cwd=UNSET if cwd is None else cwd,
            output_byte_limit=UNSET if output_byte_limit is None else output_byte_limit,
        )
        result: s.CreateTerminalResponse = await self._call("terminal/create", params)
        return result

    async def terminal_output(self, session_id: str, terminal_id: str) -> s.TerminalOutputResponse:
        params = s.TerminalOutputRequest(session_id=session_id, terminal_id=terminal_id)
        result: s.TerminalOutputResponse = await self._call("terminal/output", params)
        return result

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str
    ) -> s.WaitForTerminalExitResponse:
        params = s.WaitForTerminalExitRequest(session_id=session_id, terminal_id=terminal_id)
        result: s.WaitForTerminalExitResponse = await self._call("terminal/wait_for_exit", params)
        return result

    async def kill_terminal(self, session_id: str, terminal_id: str) -> s.KillTerminalResponse:
        params = s.KillTerminalRequest(session_id=session_id, terminal_id=terminal_id)
        result: s.KillTerminalResponse = await self._call("terminal/kill", params)
        return result

    async def release_terminal(
        self, session_id: str, terminal_id: str
    ) -> s.ReleaseTerminalResponse:
        params = s.ReleaseTerminalRequest(session_id=session_id, terminal_id=terminal_id)
        result: s.ReleaseTerminalResponse = await self._call("terminal/release", params)
        return result

    async def create_elicitation(
        self, params: s.CreateElicitationRequest
    ) -> s.CreateElicitationResponse:
        mode = getattr(params, "mode", None) or (
            "form"
            if isinstance(params, s.ElicitationFormMode)
            else "url"
            if isinstance(params, s.ElicitationUrlMode)
            else None
        )
        result: s.CreateElicitationResponse = await self._call(
            "elicitation/create", params, mode=mode
        )
        return result

    async def complete_elicitation(self, elicitation_id: str) -> None:
        await self._call(
            "elicitation/complete", s.CompleteElicitationNotification(elicitation_id=elicitation_id)
        )


AgentFactory = Callable[[], Agent]


class AgentSideConnection:
    """Serves an :class:`Agent` over a transport."""

    def __init__(
        self, agent: Agent, transport: Transport, *, check_capabilities: bool = True
    ) -> None:
        self.agent = agent
        router = build_router(
            agent,
            "agent",
            overrides={"initialize": self._initialize, "session/prompt": self._prompt},
        )
        self.connection = Connection(transport, router, name="agent")
        self.client = ClientPeer(self.connection)
        self.client.check_capabilities = check_capabilities
        self.client.remote_capabilities = s.ClientCapabilities()
        self._prompting: dict[str, int] = {}  # session id -> prompts in hand
        agent.on_connect(self.client)

    async def _initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        caps = params.client_capabilities
        self.client.remote_capabilities = (
            s.ClientCapabilities() if isinstance(caps, UnsetType) else caps
        )
        info = params.client_info
        self.client.client_info = None if isinstance(info, UnsetType) else info
        return await self.agent.initialize(params)

    async def _prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        sid = params.session_id
        self._prompting[sid] = self._prompting.get(sid, 0) + 1
        try:
            return await self.agent.prompt(params)
        finally:
            left = self._prompting[sid] - 1
            if left:
                self._prompting[sid] = left
            else:
                del self._prompting[sid]

    def start(self) -> None:
        self.connection.start()

    async def serve(self) -> None:
        """Serve until the client hangs up."""
        self.connection.start()
        try:
            await self.connection.wait_closed()
        finally:
            await self.connection.close()

    async def interrupt(self, grace: float = INTERRUPT_GRACE) -> None:
        """Stop serving in good order: cancel every running prompt as ``session/cancel``
        would, wait up to ``grace`` seconds for the requests in hand to be answered
        (prompts with ``cancelled``), then close."""
        for session_id in list(self._prompting):
            try:
                await self.agent.cancel(s.CancelNotification(session_id=session_id))
            except Exception:
                log.exception("cancelling session %s on interrupt failed", session_id)
        await self.connection.drain(grace)
        await self.close()

    async def close(self) -> None:
        await self.connection.close()


async def serve_until_interrupted(conn: AgentSideConnection) -> None:
    """:meth:`AgentSideConnection.serve`, but SIGINT calls :meth:`~AgentSideConnection.interrupt`.

    Where signal handlers cannot be installed (Windows, a thread other than the
    main one), this is plain ``serve()``.
    """
    loop = asyncio.get_running_loop()
    interrupted = asyncio.Event()
    try:
        loop.add_signal_handler(signal.SIGINT, interrupted.set)
    except (NotImplementedError, RuntimeError, ValueError):
        await conn.serve()
        return
    serving = asyncio.ensure_future(conn.serve())
    waiting = asyncio.ensure_future(interrupted.wait())
    try:
        await asyncio.wait({serving, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if interrupted.is_set():
            # From now on a second Ctrl-C raises KeyboardInterrupt: stop at once.
            loop.remove_signal_handler(signal.SIGINT)
            log.info("SIGINT: cancelling running turns, then exiting")
            await conn.interrupt()
        await serving
    finally:
        waiting.cancel()
        serving.cancel()
        with contextlib.suppress(RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGINT)


async def serve_stdio(agent: Agent, **options: Any) -> None:
    """Serve ``agent`` on this process's stdin/stdout until the client closes it or
    SIGINT interrupts it (see the module docstring)."""
    from ..transports.stdio import stdio_transport

    transport = await stdio_transport(**options)
    await serve_until_interrupted(AgentSideConnection(agent, transport))


def run_agent(agent: Agent | AgentFactory, **options: Any) -> None:
    """Run an agent as a stdio program: the usual body of an agent's ``main()``."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    instance = agent() if callable(agent) and not isinstance(agent, Agent) else agent
    assert isinstance(instance, Agent)
    try:
        asyncio.run(serve_stdio(instance, **options))
    except KeyboardInterrupt:
        pass
