#!/usr/bin/env python3
"""Interop peer CLIENT on acpwire's low tier (``acpwire.client.connection.Client``).

    .venv/bin/python tests/interop/peers/acpwire_client.py --agent "<command line>" \
        --scenario FILE|- [--wire-log FILE]

Spawns the agent (``shlex.split`` of ``--agent``), runs the scenario of
``tests/interop/PEERS.md`` and prints one JSON object per line on stdout
(``response``/``error``/``update``/``request``/``notification``, then
``{"event": "done"}``), so it is interchangeable with ``ts_client.mjs`` and
``pysdk_client.py``. ``--wire-log`` appends every message of both directions to
FILE (JSON lines) for schema validation.

How it serves the agent: ``fs/*`` through :class:`acpwire.client.fs.WorkspaceFiles`
on the real disk, confined to the session's ``cwd`` plus its additional
directories (a missing file is ``-32002``, a path outside is ``-32602``);
``terminal/*`` through :class:`acpwire.client.terminals.TerminalManager` (real
processes, ids ``term_<hex>``); permission requests by the scenario's policy
(options picked by kind); form elicitations by accepting ``{"name": "acp",
"age": 3}``; ``_acpwire/ping``/``_acpwire/echo`` answered with their params.

acpwire specifics (differences from the TS peer client):
* Steps of known agent methods are sent through acpwire's typed peer: params are
  converted to the schema model first (params that do not fit are sent as given),
  and calls the agent's capabilities do not allow are refused locally, printed
  as ``{"event": "error", ..., "error": {"code": null, "message": ...,
  "local": "CapabilityError"}}`` with nothing sent.
* ``response`` results and ``update``/``request`` params are printed as acpwire
  decoded them (fields the schema does not know are dropped, ``_meta`` is kept).
* ``$/cancel_request`` from the agent is handled by acpwire's engine (the request
  is answered ``-32800``); it is also printed as a ``notification`` event.
* ``cancelRequestAfterMs`` sends ``$/cancel_request`` for the prompt's request id
  and keeps waiting for the real answer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import msgspec
from _acpwire_wire import RecordingTransport, start_with_ids

from acpwire import schema as s
from acpwire.client.connection import Client, ClientSideConnection
from acpwire.client.fs import WorkspaceFiles
from acpwire.client.terminals import TerminalManager
from acpwire.protocol.errors import (
    LocalProtocolError,
    MethodNotFound,
    RequestCancelled,
    RequestError,
    VersionMismatchError,
)
from acpwire.protocol.version import SUPPORTED_VERSIONS
from acpwire.schema import UNSET, UnsetType
from acpwire.schema.methods import BY_NAME
from acpwire.transports.subprocess import spawn

CLIENT_NAME = "acpwire-peer-client"
ELICITATION_ANSWER = {"name": "acp", "age": 3}
SESSION_METHODS = {
    "session/prompt",
    "session/load",
    "session/resume",
    "session/close",
    "session/delete",
    "session/set_mode",
    "session/set_config_option",
    "session/cancel",
}
STEP_ONLY_KEYS = {"call", "text", "cancelAfterMs", "cancelRequestAfterMs"}
FULL_CAPABILITIES = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
    "elicitation": {"form": {}, "url": {}},
    "session": {"configOptions": {"boolean": {}}},
    "auth": {"terminal": True},
}


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def log(text: str) -> None:
    sys.stderr.write(f"[acpwire_client] {text}\n")
    sys.stderr.flush()


def wire(value: Any) -> Any:
    """The JSON of a model (or plain value) as acpwire puts it on the wire."""
    return {} if value is None else s.to_json(value)


def unset(value: Any) -> bool:
    return value is None or isinstance(value, UnsetType)


class PeerClient(Client):
    def __init__(self, scenario: dict[str, Any], terminals: TerminalManager) -> None:
        self.scenario = scenario
        self.policy = scenario.get("permission", "allow")
        self.cwd = scenario.get("cwd") or os.getcwd()
        self.terminals = terminals
        self.workspaces: dict[str, WorkspaceFiles] = {}
        self.cancelled_sessions: set[str] = set()

    def capabilities(self) -> s.ClientCapabilities:
        spec = self.scenario.get("clientCapabilities", "full")
        raw = spec if isinstance(spec, dict) else {} if spec == "empty" else FULL_CAPABILITIES
        return s.convert(raw, s.ClientCapabilities)

    def workspace(self, session_id: str) -> WorkspaceFiles:
        ws = self.workspaces.get(session_id)
        return ws if ws is not None else WorkspaceFiles(self.cwd)

    def attach(self, session_id: str, params: dict[str, Any]) -> None:
        cwd = params.get("cwd") or self.cwd
        dirs = params.get("additionalDirectories") or []
        try:
            self.workspaces[session_id] = WorkspaceFiles(
                cwd, [d for d in dirs if isinstance(d, str) and os.path.isabs(d)]
            )
        except (ValueError, OSError) as exc:
            log(f"no workspace for {session_id}: {exc}")

    # -- served requests: every one is printed as a `request` event ----------

    async def served(self, method: str, params: Any, fn: Callable[[], Awaitable[Any]]) -> Any:
        shown = wire(params) if not isinstance(params, (dict, list)) else params
        try:
            answer = await fn()
        except RequestError as exc:
            emit({"event": "request", "method": method, "params": shown, "error": exc.to_wire()})
            raise
        except asyncio.CancelledError:
            emit(
                {
                    "event": "request",
                    "method": method,
                    "params": shown,
                    "error": RequestCancelled().to_wire(),
                }
            )
            raise
        emit({"event": "request", "method": method, "params": shown, "answer": wire(answer)})
        return answer

    async def session_update(self, params: s.SessionNotification) -> None:
        emit({"event": "update", "sessionId": params.session_id, "update": wire(params.update)})

    async def request_permission(
        self, params: s.RequestPermissionRequest
    ) -> s.RequestPermissionResponse:
        async def answer() -> s.RequestPermissionResponse:
            cancelled = s.RequestPermissionResponse(outcome=s.CancelledPermissionOutcome())
            if params.session_id in self.cancelled_sessions:
                return cancelled
            if self.policy == "cancel-turn":
                self.cancelled_sessions.add(params.session_id)
                await self.agent.cancel(params.session_id)
                return cancelled
            kinds = {
                "allow": ["allow_once", "allow_always"],
                "always": ["allow_always", "allow_once"],
                "reject": ["reject_once", "reject_always"],
            }.get(self.policy)
            if kinds is None:
                raise RuntimeError(f"unknown permission policy {self.policy}")
            for kind in kinds:
                for option in params.options:
                    if option.kind == kind:
                        return s.RequestPermissionResponse(
                            outcome=s.SelectedPermissionOutcome(option_id=option.option_id)
                        )
            return cancelled

        return await self.served("session/request_permission", params, answer)

    async def read_text_file(self, params: s.ReadTextFileRequest) -> s.ReadTextFileResponse:
        async def answer() -> s.ReadTextFileResponse:
            line = None if unset(params.line) else params.line
            limit = None if unset(params.limit) else params.limit
            text = await self.workspace(params.session_id).read_text(params.path, line, limit)
            return s.ReadTextFileResponse(content=text)

        return await self.served("fs/read_text_file", params, answer)

    async def write_text_file(self, params: s.WriteTextFileRequest) -> s.WriteTextFileResponse:
        async def answer() -> s.WriteTextFileResponse:
            await self.workspace(params.session_id).write_text(params.path, params.content)
            return s.WriteTextFileResponse()

        return await self.served("fs/write_text_file", params, answer)

    async def create_terminal(self, params: s.CreateTerminalRequest) -> s.CreateTerminalResponse:
        async def answer() -> s.CreateTerminalResponse:
            env = {} if unset(params.env) else {v.name: v.value for v in params.env}
            terminal_id = await self.terminals.create(
                params.session_id,
                params.command,
                [] if unset(params.args) else params.args,
                env=env,
                cwd=self.cwd if unset(params.cwd) else params.cwd,
                output_byte_limit=None
                if unset(params.output_byte_limit)
                else params.output_byte_limit,
            )
            return s.CreateTerminalResponse(terminal_id=terminal_id)

        return await self.served("terminal/create", params, answer)

    async def terminal_output(self, params: s.TerminalOutputRequest) -> s.TerminalOutputResponse:
        async def answer() -> s.TerminalOutputResponse:
            out = await self.terminals.output(params.session_id, params.terminal_id)
            status = out.exit_status
            return s.TerminalOutputResponse(
                output=out.output,
                truncated=out.truncated,
                exit_status=UNSET
                if status is None
                else s.TerminalExitStatus(exit_code=status.exit_code, signal=status.signal),
            )

        return await self.served("terminal/output", params, answer)

    async def wait_for_terminal_exit(
        self, params: s.WaitForTerminalExitRequest
    ) -> s.WaitForTerminalExitResponse:
        async def answer() -> s.WaitForTerminalExitResponse:
            status = await self.terminals.wait_for_exit(params.session_id, params.terminal_id)
            return s.WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

        return await self.served("terminal/wait_for_exit", params, answer)

    async def kill_terminal(self, params: s.KillTerminalRequest) -> s.KillTerminalResponse:
        async def answer() -> s.KillTerminalResponse:
            await self.terminals.kill(params.session_id, params.terminal_id)
            return s.KillTerminalResponse()

        return await self.served("terminal/kill", params, answer)

    async def release_terminal(self, params: s.ReleaseTerminalRequest) -> s.ReleaseTerminalResponse:
        async def answer() -> s.ReleaseTerminalResponse:
            await self.terminals.release(params.session_id, params.terminal_id)
            return s.ReleaseTerminalResponse()

        return await self.served("terminal/release", params, answer)

    async def create_elicitation(
        self, params: s.CreateElicitationRequest
    ) -> s.CreateElicitationResponse:
        async def answer() -> s.CreateElicitationResponse:
            if isinstance(params, s.ElicitationFormMode):
                return s.ElicitationAcceptAction(content=dict(ELICITATION_ANSWER))
            if isinstance(params, s.ElicitationUrlMode):
                return s.ElicitationAcceptAction()
            return s.ElicitationDeclineAction()

        return await self.served("elicitation/create", params, answer)

    async def complete_elicitation(self, params: s.CompleteElicitationNotification) -> None:
        emit({"event": "notification", "method": "elicitation/complete", "params": wire(params)})

    async def ext_method(self, method: str, params: Any) -> Any:
        async def answer() -> Any:
            if method in ("_acpwire/ping", "_acpwire/echo"):
                return params if params is not None else {}
            raise MethodNotFound(f"Method not found: {method}", {"method": method})

        return await self.served(method, params, answer)

    async def ext_notification(self, method: str, params: Any) -> None:
        emit({"event": "notification", "method": method, "params": params})


def local_error(exc: BaseException) -> dict[str, Any]:
    return {"code": None, "message": str(exc), "local": type(exc).__name__}


async def run(agent_argv: list[str], scenario: dict[str, Any], wire_log: str | None) -> None:
    def on_receive_line(line: str) -> None:
        log(f"agent: {line}")

    inner = await spawn(agent_argv[0], agent_argv[1:], on_stderr=on_receive_line, grace_period=1.0)

    class Transport(RecordingTransport):
        async def receive(self) -> Any:
            message = await super().receive()
            if isinstance(message, (bytes, bytearray)) and b"$/cancel_request" in message:
                with contextlib.suppress(ValueError):
                    obj = json.loads(message)
                    if obj.get("method") == "$/cancel_request" and "id" not in obj:
                        emit(
                            {
                                "event": "notification",
                                "method": obj["method"],
                                "params": obj.get("params"),
                            }
                        )
            return message

    transport = Transport(inner, wire_log)
    async with TerminalManager(kill_grace=3.0) as terminals:
        client = PeerClient(scenario, terminals)
        conn = ClientSideConnection(client, transport)
        try:
            await run_steps(client, conn, scenario)
            await asyncio.sleep(0.05)
        finally:
            await conn.close()
    emit({"event": "done"})


async def run_steps(
    client: PeerClient, conn: ClientSideConnection, scenario: dict[str, Any]
) -> None:
    agent = conn.agent
    last_session: str | None = None

    def resolve(value: Any) -> Any:
        return last_session if value in (None, "$last") else value

    def build(step: dict[str, Any]) -> dict[str, Any]:
        params = {k: v for k, v in step.items() if k not in STEP_ONLY_KEYS}
        call = step["call"]
        if call in SESSION_METHODS:
            params["sessionId"] = resolve(params.get("sessionId"))
        if call == "initialize":
            params.setdefault("protocolVersion", 1)
            params.setdefault("clientCapabilities", wire(client.capabilities()))
            params.setdefault(
                "clientInfo", {"name": CLIENT_NAME, "title": "acpwire peer client", "version": "1"}
            )
        elif call in ("session/new", "session/load", "session/resume"):
            params.setdefault("cwd", client.cwd)
            params.setdefault("mcpServers", [])
        elif call == "session/prompt":
            params.setdefault("prompt", [{"type": "text", "text": step.get("text", "")}])
        elif call == "session/set_config_option" and isinstance(params.get("value"), bool):
            params.setdefault("type", "boolean")
        return params

    async def send(call: str, params: dict[str, Any]) -> Any:
        spec = BY_NAME.get(call)
        if spec is None or spec.handled_by != "agent" or not spec.is_request:
            return await conn.connection.request(call, params)
        try:
            model: Any = s.convert(params, spec.params)
        except (msgspec.ValidationError, ValueError, TypeError):
            model = params  # deliberately invalid: let the agent judge it
        result = await agent._call(call, model)
        if call == "initialize":
            if result.protocol_version not in SUPPORTED_VERSIONS:
                raise VersionMismatchError(
                    f"agent answered protocol version {result.protocol_version}; "
                    f"this client speaks {sorted(SUPPORTED_VERSIONS)}"
                )
            caps = result.agent_capabilities
            agent.remote_capabilities = s.AgentCapabilities() if unset(caps) else caps
            agent.initialize_response = result
        return result

    async def report(index: int, method: str, awaitable: Awaitable[Any]) -> Any:
        try:
            result = await awaitable
        except RequestError as exc:
            emit({"event": "error", "step": index, "method": method, "error": exc.to_wire()})
            return None
        except LocalProtocolError as exc:
            emit({"event": "error", "step": index, "method": method, "error": local_error(exc)})
            return None
        emit({"event": "response", "step": index, "method": method, "result": wire(result)})
        return result

    for index, step in enumerate(scenario["steps"]):
        call = step["call"]
        if call == "ext_notify":
            await agent.ext_notification(step["method"], step.get("params") or {})
            continue
        if call == "ext":
            await report(
                index, step["method"], agent.ext_method(step["method"], step.get("params") or {})
            )
            continue
        if call == "raw":
            await report(
                index, step["method"], conn.connection.request(step["method"], step.get("params"))
            )
            continue
        params = build(step)
        if call == "session/cancel":
            client.cancelled_sessions.add(params["sessionId"])
            await conn.connection.notify(call, params)
            continue
        if call == "session/prompt":
            sid = params["sessionId"]
            client.cancelled_sessions.discard(sid)
            task, ids = start_with_ids(lambda p=params: send("session/prompt", p))
            extra: list[asyncio.Task[Any]] = []
            if step.get("cancelAfterMs") is not None:

                async def cancel_later(
                    delay: float = step["cancelAfterMs"] / 1000, sid: str = sid
                ) -> None:
                    await asyncio.sleep(delay)
                    client.cancelled_sessions.add(sid)
                    await agent.cancel(sid)

                extra.append(asyncio.ensure_future(cancel_later()))
            if step.get("cancelRequestAfterMs") is not None:

                async def cancel_request_later(
                    delay: float = step["cancelRequestAfterMs"] / 1000, ids: list[Any] = ids
                ) -> None:
                    await asyncio.sleep(delay)
                    for request_id in ids:
                        await agent.cancel_request(request_id)

                extra.append(asyncio.ensure_future(cancel_request_later()))
            try:
                await report(index, call, task)
            finally:
                for t in extra:
                    t.cancel()
                client.cancelled_sessions.discard(sid)
            continue
        result = await report(index, call, send(call, params))
        if call == "session/new" and result is not None:
            last_session = result.session_id
            client.attach(last_session, params)
        elif call in ("session/load", "session/resume") and result is not None:
            last_session = params["sessionId"]
            client.attach(last_session, params)


def main() -> None:
    parser = argparse.ArgumentParser(description="acpwire interop peer client")
    parser.add_argument("--agent", required=True, help="agent command line")
    parser.add_argument("--scenario", required=True, help="scenario JSON file, or - for stdin")
    parser.add_argument(
        "--wire-log", help="append both directions of the wire to this JSON-lines file"
    )
    opts = parser.parse_args()
    try:
        text = (
            sys.stdin.read()
            if opts.scenario == "-"
            else open(opts.scenario, encoding="utf-8").read()
        )
        scenario = json.loads(text)
        if not isinstance(scenario, dict) or not isinstance(scenario.get("steps"), list):
            raise ValueError("the scenario must be a JSON object with a steps array")
        argv = shlex.split(opts.agent)
        if not argv:
            raise ValueError("--agent is empty")
        asyncio.run(run(argv, scenario, opts.wire_log))
    except Exception as exc:
        sys.stderr.write(f"acpwire_client: {exc}\n{traceback.format_exc()}")
        sys.stdout.flush()
        sys.exit(1)


if __name__ == "__main__":
    main()
