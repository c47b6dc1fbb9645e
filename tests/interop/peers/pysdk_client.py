#!/usr/bin/env python3
"""Interop peer CLIENT built on the official Python ACP SDK (``agent-client-protocol==0.12.1``).

Usage (with the interpreter of the SDK's own venv)::

    .cache/pysdk-venv/bin/python tests/interop/peers/pysdk_client.py \
        --agent "<agent command line>" --scenario FILE|-

Spawns the agent (``shlex.split`` of ``--agent``) through ``acp.spawn_agent_process``,
runs the scenario of ``tests/interop/PEERS.md`` and prints one JSON object per
line on stdout (``response``/``error``/``update``/``request``/``notification``
events, then ``{"event": "done"}``).  It serves ``fs/*`` on the real disk,
``terminal/*`` with real processes, permission requests per the scenario policy
and form elicitations by accepting ``{"name": "acp", "age": 3}``.  Exit status 0
after ``done``; non-zero with the message on stderr when the run crashes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import signal as _signal
import sys
import traceback
import uuid
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process
from acp import schema as S
from pydantic import BaseModel

CLIENT_NAME = "pysdk-peer-client"
SDK_VERSION = "0.12.1"
ELICITATION_ANSWER = {"name": "acp", "age": 3}


# --------------------------------------------------------------------- output
def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def dump(value: Any) -> Any:
    """JSON view of what the SDK parsed: wire (camelCase) names, only fields that were present."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if isinstance(value, list):
        return [dump(v) for v in value]
    if isinstance(value, dict):
        return {k: dump(v) for k, v in value.items()}
    return value


def answer_json(value: Any) -> Any:
    """JSON of an answer we return to the SDK (as it goes on the wire)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {} if value is None else value


def params_json(
    model: type[BaseModel], values: dict[str, Any], meta: dict[str, Any]
) -> dict[str, Any]:
    """Rebuild request params (wire names) from the keyword arguments the SDK handed us."""
    out: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name == "field_meta" or name not in values or values[name] is None:
            continue
        out[info.alias or name] = dump(values[name])
    if meta:
        out["_meta"] = dump(meta)
    return out


def error_json(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, RequestError):
        err: dict[str, Any] = {"code": exc.code, "message": str(exc)}
        if exc.data is not None:
            err["data"] = exc.data
        return err
    return {
        "code": None,
        "message": f"{type(exc).__name__}: {exc}",
        "sdkException": type(exc).__name__,
    }


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _write_text(path: str, content: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(content)


def _signal_name(returncode: int) -> str:
    try:
        return _signal.Signals(-returncode).name
    except ValueError:
        return str(-returncode)


# ------------------------------------------------------------------ terminals
class Terminal:
    """A real process whose merged stdout/stderr is kept up to an output byte limit."""

    def __init__(self, proc: asyncio.subprocess.Process, limit: int | None) -> None:
        self.proc = proc
        self.limit = limit
        self.buf = bytearray()
        self.truncated = False
        self.escalation: asyncio.TimerHandle | None = None
        self.pump = asyncio.create_task(self._pump())

    async def _pump(self) -> None:
        assert self.proc.stdout is not None
        while True:
            chunk = await self.proc.stdout.read(65536)
            if not chunk:
                return
            self.buf.extend(chunk)
            if self.limit is not None and len(self.buf) > self.limit:
                cut = len(self.buf) - self.limit
                # Truncate from the start, never inside a UTF-8 sequence.
                while cut < len(self.buf) and (self.buf[cut] & 0xC0) == 0x80:
                    cut += 1
                del self.buf[:cut]
                self.truncated = True

    @property
    def exited(self) -> bool:
        return self.proc.returncode is not None

    def exit_status(self) -> S.TerminalExitStatus | None:
        rc = self.proc.returncode
        if rc is None:
            return None
        if rc < 0:
            return S.TerminalExitStatus(exit_code=None, signal=_signal_name(rc))
        return S.TerminalExitStatus(exit_code=rc, signal=None)

    def output_text(self) -> str:
        data = bytes(self.buf)
        if not (self.exited and self.pump.done()):
            # Do not split a UTF-8 sequence that is still being written.
            i = len(data)
            back = 0
            while i > 0 and back < 4 and (data[i - 1] & 0xC0) == 0x80:
                i -= 1
                back += 1
            if i > 0 and data[i - 1] >= 0xC0:
                lead = data[i - 1]
                need = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
                if back + 1 < need:
                    data = data[: i - 1]
        return data.decode("utf-8", errors="replace")

    async def wait(self) -> None:
        await self.proc.wait()
        # The rest of the output, for at most 2 s (a child may still hold the pipe).
        # asyncio.wait, not a suppressed wait_for: a cancellation of this request (the
        # connection closing) must still end it, or the SDK's shutdown, which awaits
        # its handler tasks, waits for this answer's send forever.
        await asyncio.wait({self.pump}, timeout=2.0)

    def kill(self) -> None:
        """SIGTERM to the command's process group; SIGKILL if it is still there 2 s later."""
        if self.proc.returncode is not None:
            return
        self._signal_group(_signal.SIGTERM)
        if self.escalation is None:
            self.escalation = asyncio.get_running_loop().call_later(
                2.0, self._signal_group, _signal.SIGKILL
            )

    def _signal_group(self, sig: int) -> None:
        if self.proc.returncode is not None:
            return
        # The whole group: the command may have children holding the output pipe.
        # Never follow up with proc.kill(): Popen.send_signal() polls first and can
        # reap the child behind asyncio's child watcher (-> bogus exit status 255).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)


# --------------------------------------------------------------------- client
class PeerClient:
    """ACP client (SDK ``Client`` interface) that records everything as JSON lines."""

    def __init__(self, scenario: dict[str, Any]) -> None:
        self.scenario = scenario
        self.permission_policy = scenario.get("permission", "allow")
        self.conn: Any = None
        self.terminals: dict[str, Terminal] = {}

    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    # -- helpers
    async def _serve(self, method: str, params: dict[str, Any], produce: Any) -> Any:
        try:
            result = await produce()
        except Exception as exc:
            err = (
                exc
                if isinstance(exc, RequestError)
                else RequestError.internal_error({"details": str(exc)})
            )
            emit({"event": "request", "method": method, "params": params, "error": error_json(err)})
            raise err from None
        emit(
            {"event": "request", "method": method, "params": params, "answer": answer_json(result)}
        )
        return result

    def _terminal(self, terminal_id: str) -> Terminal:
        term = self.terminals.get(terminal_id)
        if term is None:
            raise RequestError(-32002, "Resource not found", {"terminalId": terminal_id})
        return term

    # -- session/update
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        event: dict[str, Any] = {"event": "update", "sessionId": session_id, "update": dump(update)}
        if kwargs:
            event["_meta"] = dump(kwargs)
        emit(event)

    # -- permission
    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> S.RequestPermissionResponse:
        params = params_json(
            S.RequestPermissionRequest,
            {"session_id": session_id, "tool_call": tool_call, "options": options},
            kwargs,
        )

        async def produce() -> S.RequestPermissionResponse:
            policy = self.permission_policy
            if policy == "cancel-turn":
                await self.conn.cancel(session_id=session_id)
                return S.RequestPermissionResponse(outcome=S.DeniedOutcome(outcome="cancelled"))
            wanted = {
                "allow": ["allow_once", "allow_always"],
                "always": ["allow_always", "allow_once"],
            }.get(policy, ["reject_once", "reject_always"])
            for kind in wanted:
                for opt in options:
                    if opt.kind == kind:
                        return S.RequestPermissionResponse(
                            outcome=S.AllowedOutcome(outcome="selected", option_id=opt.option_id)
                        )
            return S.RequestPermissionResponse(outcome=S.DeniedOutcome(outcome="cancelled"))

        return await self._serve("session/request_permission", params, produce)

    # -- fs
    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> S.ReadTextFileResponse:
        params = params_json(
            S.ReadTextFileRequest,
            {"session_id": session_id, "path": path, "line": line, "limit": limit},
            kwargs,
        )

        async def produce() -> S.ReadTextFileResponse:
            if not os.path.isabs(path):
                raise RequestError.invalid_params({"details": f"path must be absolute: {path!r}"})
            try:
                text = _read_text(path)
            except FileNotFoundError:
                raise RequestError(-32002, "Resource not found", {"uri": path}) from None
            except (OSError, UnicodeDecodeError) as exc:
                raise RequestError.internal_error({"details": str(exc)}) from None
            if line is not None or limit is not None:
                lines = text.split("\n")
                start = max((line or 1) - 1, 0)
                end = None if limit is None else start + max(limit, 0)
                text = "\n".join(lines[start:end])
            return S.ReadTextFileResponse(content=text)

        return await self._serve("fs/read_text_file", params, produce)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> S.WriteTextFileResponse:
        params = params_json(
            S.WriteTextFileRequest,
            {"session_id": session_id, "path": path, "content": content},
            kwargs,
        )

        async def produce() -> S.WriteTextFileResponse:
            if not os.path.isabs(path):
                raise RequestError.invalid_params({"details": f"path must be absolute: {path!r}"})
            try:
                _write_text(path, content)
            except OSError as exc:
                raise RequestError.internal_error({"details": str(exc)}) from None
            return S.WriteTextFileResponse()

        return await self._serve("fs/write_text_file", params, produce)

    # -- terminals
    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[Any] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> S.CreateTerminalResponse:
        params = params_json(
            S.CreateTerminalRequest,
            {
                "session_id": session_id,
                "command": command,
                "args": args,
                "env": env,
                "cwd": cwd,
                "output_byte_limit": output_byte_limit,
            },
            kwargs,
        )

        async def produce() -> S.CreateTerminalResponse:
            proc_env = dict(os.environ)
            for var in env or []:
                proc_env[var.name] = var.value
            argv = [command, *(args or [])]
            spawn = dict(
                cwd=cwd or None,
                env=proc_env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                proc = await asyncio.create_subprocess_exec(*argv, **spawn)
            except FileNotFoundError:
                if args or not any(c.isspace() for c in command):
                    raise RequestError.invalid_params(
                        {"details": f"command not found: {command!r}"}
                    ) from None
                # A whole command line in `command`: run it through the shell.
                proc = await asyncio.create_subprocess_exec("/bin/sh", "-c", command, **spawn)
            except OSError as exc:
                raise RequestError.invalid_params(
                    {"details": f"cannot start {command!r}: {exc}"}
                ) from None
            terminal_id = f"term-{uuid.uuid4().hex[:12]}"
            self.terminals[terminal_id] = Terminal(proc, output_byte_limit)
            return S.CreateTerminalResponse(terminal_id=terminal_id)

        return await self._serve("terminal/create", params, produce)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> S.TerminalOutputResponse:
        params = params_json(
            S.TerminalOutputRequest, {"session_id": session_id, "terminal_id": terminal_id}, kwargs
        )

        async def produce() -> S.TerminalOutputResponse:
            term = self._terminal(terminal_id)
            if term.exited:
                # Let the pump drain what the process wrote before exiting.
                await term.wait()
            return S.TerminalOutputResponse(
                output=term.output_text(), truncated=term.truncated, exit_status=term.exit_status()
            )

        return await self._serve("terminal/output", params, produce)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> S.WaitForTerminalExitResponse:
        params = params_json(
            S.WaitForTerminalExitRequest,
            {"session_id": session_id, "terminal_id": terminal_id},
            kwargs,
        )

        async def produce() -> S.WaitForTerminalExitResponse:
            term = self._terminal(terminal_id)
            await term.wait()
            status = term.exit_status()
            assert status is not None
            return S.WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

        return await self._serve("terminal/wait_for_exit", params, produce)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> S.KillTerminalResponse:
        params = params_json(
            S.KillTerminalRequest, {"session_id": session_id, "terminal_id": terminal_id}, kwargs
        )

        async def produce() -> S.KillTerminalResponse:
            self._terminal(terminal_id).kill()
            return S.KillTerminalResponse()

        return await self._serve("terminal/kill", params, produce)

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> S.ReleaseTerminalResponse:
        params = params_json(
            S.ReleaseTerminalRequest, {"session_id": session_id, "terminal_id": terminal_id}, kwargs
        )

        async def produce() -> S.ReleaseTerminalResponse:
            term = self._terminal(terminal_id)
            term.kill()
            del self.terminals[terminal_id]
            return S.ReleaseTerminalResponse()

        return await self._serve("terminal/release", params, produce)

    # -- elicitation
    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        params: dict[str, Any] = {"message": message}
        params["mode"] = "url" if hasattr(mode, "url") else "form"
        params.update(mode.model_dump(mode="json", by_alias=True, exclude_none=True))
        if kwargs:
            params["_meta"] = dump(kwargs)

        async def produce() -> Any:
            if params["mode"] == "form":
                return S.AcceptElicitationResponse(
                    action="accept", content=dict(ELICITATION_ANSWER)
                )
            return S.AcceptElicitationResponse(action="accept")

        return await self._serve("elicitation/create", params, produce)

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        params: dict[str, Any] = {"elicitationId": elicitation_id}
        if kwargs:
            params["_meta"] = dump(kwargs)
        emit({"event": "notification", "method": "elicitation/complete", "params": params})

    # -- extensions
    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        async def produce() -> dict[str, Any]:
            if method in ("acpwire/echo", "acpwire/ping"):
                return params
            raise RequestError.method_not_found(f"_{method}")

        return await self._serve(f"_{method}", params, produce)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        emit({"event": "notification", "method": f"_{method}", "params": params})

    async def shutdown(self) -> None:
        for term in list(self.terminals.values()):
            term._signal_group(_signal.SIGKILL)
        self.terminals.clear()


# ------------------------------------------------------------------ scenario
def client_capabilities(spec: Any) -> S.ClientCapabilities:
    if spec in (None, "empty"):
        return S.ClientCapabilities()
    if spec == "full":
        return S.ClientCapabilities(
            fs=S.FileSystemCapabilities(read_text_file=True, write_text_file=True),
            terminal=True,
            elicitation=S.ElicitationCapabilities(
                form=S.ElicitationFormCapabilities(), url=S.ElicitationUrlCapabilities()
            ),
            session=S.ClientSessionCapabilities(
                config_options=S.SessionConfigOptionsCapabilities(
                    boolean=S.BooleanConfigOptionCapabilities()
                )
            ),
            auth=S.AuthCapabilities(terminal=True),
        )
    if isinstance(spec, dict):
        return S.ClientCapabilities.model_validate(spec)
    raise ValueError(f"bad clientCapabilities {spec!r}")


class ScenarioRunner:
    def __init__(self, scenario: dict[str, Any], client: PeerClient, conn: Any) -> None:
        self.scenario = scenario
        self.client = client
        self.conn = conn
        self.cwd = scenario.get("cwd") or os.getcwd()
        self.last_session: str | None = None
        self.next_cursor: str | None = None
        self.last_prompt_request_id: Any = None

    def observe(self, event: Any) -> Any:
        message = event.message
        if event.direction.value == "outgoing":
            if message.get("method") == "session/prompt" and "id" in message:
                self.last_prompt_request_id = message["id"]
            return None
        method = message.get("method")
        if isinstance(method, str) and "id" not in message and method not in _SDK_NOTIFICATIONS:
            if not method.startswith("_"):
                # The SDK has no handler for these ($/cancel_request, unknown methods): it
                # only logs them. Print them from the raw-message observer instead; the SDK
                # runs an async observer as a task, which keeps the events in wire order.
                return _emit_later(
                    {"event": "notification", "method": method, "params": message.get("params")}
                )
        return None

    def _sid(self, step: dict[str, Any]) -> str:
        sid = step.get("sessionId", "$last")
        if sid == "$last":
            if self.last_session is None:
                raise ValueError("step needs a session but none was created yet")
            return self.last_session
        return sid

    async def _raw(self, method: str, params: Any) -> Any:
        # The SDK has no public way to send arbitrary methods: use its JSON-RPC connection.
        return await self.conn._conn.send_request(method, params)

    async def run(self) -> None:
        for index, step in enumerate(self.scenario.get("steps", [])):
            await self.run_step(index, step)

    async def run_step(self, index: int, step: dict[str, Any]) -> None:
        call = step.get("call")
        method = {"ext": step.get("method"), "raw": step.get("method")}.get(call, call)
        try:
            result = await self._dispatch(call, step)
        except RequestError as exc:
            emit({"event": "error", "step": index, "method": method, "error": error_json(exc)})
            return
        except ConnectionError as exc:
            emit({"event": "error", "step": index, "method": method, "error": error_json(exc)})
            raise
        except Exception as exc:  # SDK-side validation of the answer failed, bad step, ...
            emit({"event": "error", "step": index, "method": method, "error": error_json(exc)})
            return
        if result is _NO_RESPONSE:
            return
        emit({"event": "response", "step": index, "method": method, "result": dump(result)})

    async def _dispatch(self, call: str, step: dict[str, Any]) -> Any:
        conn = self.conn
        if call == "initialize":
            caps = client_capabilities(
                step.get("clientCapabilities", self.scenario.get("clientCapabilities", "full"))
            )
            return await conn.initialize(
                protocol_version=step.get("protocolVersion", PROTOCOL_VERSION),
                client_capabilities=caps,
                client_info=S.Implementation(
                    name=CLIENT_NAME, title="Python SDK peer client", version=SDK_VERSION
                ),
            )
        if call == "authenticate":
            return await conn.authenticate(method_id=step.get("methodId", "token"))
        if call == "session/new":
            result = await conn.new_session(
                cwd=step.get("cwd", self.cwd),
                additional_directories=step.get("additionalDirectories"),
                mcp_servers=step.get("mcpServers", []),
            )
            self.last_session = result.session_id
            return result
        if call == "session/prompt":
            return await self._prompt(step)
        if call == "session/set_mode":
            return await conn.set_session_mode(session_id=self._sid(step), mode_id=step["modeId"])
        if call == "session/set_config_option":
            return await conn.set_config_option(
                config_id=step["configId"], session_id=self._sid(step), value=step["value"]
            )
        if call == "session/list":
            cursor = step.get("cursor")
            if cursor == "$next":
                cursor = self.next_cursor
            result = await conn.list_sessions(cwd=step.get("cwd"), cursor=cursor)
            self.next_cursor = result.next_cursor
            return result
        if call == "session/load":
            sid = self._sid(step)
            result = await conn.load_session(
                cwd=step.get("cwd", self.cwd),
                session_id=sid,
                mcp_servers=step.get("mcpServers", []),
                additional_directories=step.get("additionalDirectories"),
            )
            self.last_session = sid
            return result
        if call == "session/resume":
            sid = self._sid(step)
            result = await conn.resume_session(
                session_id=sid,
                cwd=step.get("cwd", self.cwd),
                additional_directories=step.get("additionalDirectories"),
                mcp_servers=step.get("mcpServers"),
            )
            self.last_session = sid
            return result
        if call == "session/close":
            return await conn.close_session(session_id=self._sid(step))
        if call == "session/delete":
            # Not in SDK 0.12.1's client API: sent through its raw connection.
            return await self._raw("session/delete", {"sessionId": self._sid(step)})
        if call == "logout":
            # Not in SDK 0.12.1's client API: sent through its raw connection.
            return await self._raw("logout", step.get("params", {}))
        if call == "ext":
            name = step["method"]
            params = step.get("params", {})
            if name.startswith("_"):
                return await conn.ext_method(name[1:], params)
            return await self._raw(name, params)
        if call == "ext_notify":
            name = step["method"]
            params = step.get("params", {})
            if name.startswith("_"):
                await conn.ext_notification(name[1:], params)
            else:
                await conn._conn.send_notification(name, params)
            return _NO_RESPONSE
        if call == "raw":
            if step.get("notification"):
                await conn._conn.send_notification(step["method"], step.get("params"))
                return _NO_RESPONSE
            return await self._raw(step["method"], step.get("params", {}))
        if call == "session/cancel":
            await conn.cancel(session_id=self._sid(step))
            return _NO_RESPONSE
        if not isinstance(call, str) or not call:
            raise ValueError(f"bad step call {call!r}")
        # Any other call: a request of that name, the remaining step keys as params.
        params = {
            k: v
            for k, v in step.items()
            if k not in ("call", "text", "cancelAfterMs", "cancelRequestAfterMs")
        }
        return await self._raw(call, params)

    async def _prompt(self, step: dict[str, Any]) -> Any:
        sid = self._sid(step)
        if "prompt" in step:
            blocks = step["prompt"]
        else:
            blocks = [S.TextContentBlock(type="text", text=step.get("text", ""))]
        task = asyncio.create_task(self.conn.prompt(session_id=sid, prompt=blocks))
        if step.get("cancelAfterMs") is not None:
            await asyncio.wait({task}, timeout=step["cancelAfterMs"] / 1000)
            if not task.done():
                await self.conn.cancel(session_id=sid)
        if step.get("cancelRequestAfterMs") is not None:
            await asyncio.wait({task}, timeout=step["cancelRequestAfterMs"] / 1000)
            if not task.done() and self.last_prompt_request_id is not None:
                # The SDK has no $/cancel_request API: sent through its raw connection.
                await self.conn._conn.send_notification(
                    "$/cancel_request", {"requestId": self.last_prompt_request_id}
                )
        return await task


_NO_RESPONSE = object()
# Notifications the SDK client routes to PeerClient methods (`_...` go to ext_notification).
_SDK_NOTIFICATIONS = {"session/update", "elicitation/complete"}


async def _emit_later(event: dict[str, Any]) -> None:
    emit(event)


async def run(agent_command: str, scenario: dict[str, Any]) -> int:
    argv = shlex.split(agent_command)
    if not argv:
        raise ValueError("--agent is empty")
    client = PeerClient(scenario)
    runner_box: list[ScenarioRunner] = []

    def observer(event: Any) -> Any:
        return runner_box[0].observe(event) if runner_box else None

    async with spawn_agent_process(
        client,
        argv[0],
        *argv[1:],
        env=dict(os.environ),
        # Agent stderr goes straight to ours; at the end the SDK closes the agent's
        # stdin, then SIGTERMs it after 1 s and SIGKILLs it 1 s later.
        transport_kwargs={"stderr": None, "shutdown_timeout": 1.0},
        use_unstable_protocol=True,  # needed for elicitation/create to be routed to us
        observers=[observer],
    ) as (conn, _process):
        runner = ScenarioRunner(scenario, client, conn)
        runner_box.append(runner)
        try:
            await runner.run()
            emit({"event": "done"})
        finally:
            await client.shutdown()
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", required=True, help="agent command line (shlex-split)")
    parser.add_argument("--scenario", required=True, help="scenario JSON file, or - for stdin")
    args = parser.parse_args()
    try:
        if args.scenario == "-":
            scenario = json.load(sys.stdin)
        else:
            with open(args.scenario, encoding="utf-8") as fh:
                scenario = json.load(fh)
        code = asyncio.run(run(args.agent, scenario))
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        print(f"pysdk_client: crashed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        sys.exit(1)
    sys.exit(code)


if __name__ == "__main__":
    main()
