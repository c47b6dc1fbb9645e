"""A small, correct ACP agent on stdio, written with nothing but the standard library.

It is the base of the ``acp check`` corpus: each ``*.py`` beside it subclasses
:class:`Agent`, overrides one thing and so plants exactly one defect. This base must pass
every check (``test_corpus.py`` runs it as the control).

What it does:

* offers ``loadSession``, ``sessionCapabilities.list``, image and embedded-context prompts
  (not audio), two modes (``ask``, ``code``), a select option ``model`` and, to clients that
  advertise it, a boolean option ``verbose``; a terminal auth method only to clients with
  ``auth.terminal``;
* prompt ``slow``: one chunk, then waits until cancelled (``session/cancel`` or
  ``$/cancel_request``), at most 30 s; prompt ``tools``: a tool call with a permission
  request, then, if allowed, ``in_progress``, a file written and read back through the
  client, a command in a client terminal (released), ``completed``; any other prompt: one
  chunk echoing it;
* connects to stdio MCP servers from ``session/new`` (an MCP ``initialize`` each);
* answers unknown methods -32601, bad params -32602, unknown sessions -32002, a line
  that is not JSON -32700 with id null; ignores unknown notifications; exits when stdin
  ends.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import sys
import threading
from typing import Any

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
NOT_FOUND = -32002
MODES = [
    {"id": "ask", "name": "Ask"},
    {"id": "code", "name": "Code"},
]
MODELS = ["fast", "smart"]


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Session:
    def __init__(self, session_id: str, cwd: str) -> None:
        self.id = session_id
        self.cwd = cwd
        self.mode = "ask"
        self.model = "fast"
        self.verbose = False
        self.history: list[dict[str, Any]] = []
        self.cancel = threading.Event()
        self.running = False
        self.mcp: list[subprocess.Popen[bytes]] = []


class Agent:
    """Override the hooks below to plant a defect; everything else stays correct."""

    name = "corpus-agent"

    def __init__(self) -> None:
        self.out_lock = threading.Lock()
        self.client_caps: dict[str, Any] = {}
        self.sessions: dict[str, Session] = {}
        self.counter = itertools.count(1)
        self.request_ids = itertools.count(1)
        self.pending: dict[Any, queue.Queue[dict[str, Any]]] = {}
        self.prompt_requests: dict[Any, Session] = {}

    # -- output

    def write(self, message: dict[str, Any]) -> None:
        self.write_line(json.dumps(message))

    def write_line(self, line: str) -> None:
        with self.out_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def respond(self, request_id: Any, result: Any) -> None:
        self.write({"jsonrpc": "2.0", "id": request_id, "result": result})

    def respond_error(self, request_id: Any, code: int, message: str) -> None:
        self.write(
            {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
        )

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.write({"jsonrpc": "2.0", "method": method, "params": params})

    def update(self, session: Session, update: dict[str, Any]) -> None:
        self.notify("session/update", {"sessionId": session.id, "update": update})

    def say(self, session: Session, text: str) -> None:
        update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        session.history.append(update)
        self.update(session, update)

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A request to the client; its response message (result or error)."""
        request_id = self.next_request_id()
        box: queue.Queue[dict[str, Any]] = queue.Queue()
        self.pending[request_id] = box
        self.write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        try:
            return box.get(timeout=20)
        except queue.Empty:
            return {"error": {"code": -32603, "message": "no answer"}}
        finally:
            self.pending.pop(request_id, None)

    def next_request_id(self) -> Any:
        return next(self.request_ids)

    # -- main loop

    def run(self) -> None:
        self.started()
        for raw in sys.stdin.buffer:
            line = raw.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self.on_parse_error(line)
                continue
            if not isinstance(message, dict):
                continue
            self.dispatch(message)
        self.end_of_input()

    def started(self) -> None:
        """Called once before reading input."""

    def end_of_input(self) -> None:
        for session in self.sessions.values():
            session.cancel.set()
            for proc in session.mcp:
                proc.kill()
        os._exit(0)

    def on_parse_error(self, line: bytes) -> None:
        self.respond_error(None, -32700, "Parse error")

    def dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if method is None:
            box = self.pending.get(message.get("id"))
            if box is not None:
                box.put(message)
            return
        if "id" not in message:
            self.on_notification(str(method), message.get("params") or {})
            return
        request_id = message["id"]
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        if method == "session/prompt":
            threading.Thread(target=self.run_prompt, args=(request_id, params), daemon=True).start()
            return
        handler = getattr(self, "on_" + str(method).replace("/", "_"), None)
        if handler is None or str(method).startswith("_"):
            self.on_unknown_request(request_id, str(method))
            return
        try:
            result = handler(params)
        except RpcError as exc:
            self.respond_error(request_id, exc.code, exc.message)
            return
        self.respond(request_id, result)

    def on_unknown_request(self, request_id: Any, method: str) -> None:
        self.respond_error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "session/cancel":
            self.on_cancel(params)
        elif method == "$/cancel_request":
            session = self.prompt_requests.get(params.get("requestId"))
            if session is not None:
                session.cancel.set()
        # anything else is ignored

    def on_cancel(self, params: dict[str, Any]) -> None:
        session = self.sessions.get(str(params.get("sessionId")))
        if session is not None:
            session.cancel.set()

    # -- initialization

    def on_initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        self.client_caps = params.get("clientCapabilities") or {}
        result: dict[str, Any] = {
            "protocolVersion": self.protocol_version(params.get("protocolVersion")),
            "agentCapabilities": self.capabilities(),
            "agentInfo": {"name": self.name, "version": "1.0"},
            "authMethods": self.auth_methods(),
        }
        return result

    def protocol_version(self, requested: Any) -> Any:
        return 1

    def capabilities(self) -> dict[str, Any]:
        return {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "sessionCapabilities": {"list": {}},
        }

    def auth_methods(self) -> list[dict[str, Any]]:
        if (self.client_caps.get("auth") or {}).get("terminal") is True:
            return [{"id": "login", "name": "Log in", "type": "terminal", "args": ["--login"]}]
        return []

    def on_authenticate(self, params: dict[str, Any]) -> dict[str, Any]:
        raise RpcError(INVALID_PARAMS, f"unknown auth method {params.get('methodId')!r}")

    # -- sessions

    def boolean_options(self) -> bool:
        session_caps = self.client_caps.get("session") or {}
        return isinstance((session_caps.get("configOptions") or {}).get("boolean"), dict)

    def config_options(self, session: Session) -> list[dict[str, Any]]:
        options: list[dict[str, Any]] = [
            {
                "id": "model",
                "name": "Model",
                "category": "model",
                "type": "select",
                "currentValue": session.model,
                "options": [{"value": m, "name": m.title()} for m in MODELS],
            }
        ]
        if self.boolean_options():
            options.append(
                {
                    "id": "verbose",
                    "name": "Verbose",
                    "type": "boolean",
                    "currentValue": session.verbose,
                }
            )
        return options

    def session_state(self, session: Session) -> dict[str, Any]:
        return {
            "modes": {"currentModeId": session.mode, "availableModes": MODES},
            "configOptions": self.config_options(session),
        }

    def check_cwd(self, params: dict[str, Any]) -> str:
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not isinstance(params.get("mcpServers"), list):
            raise RpcError(INVALID_PARAMS, "cwd must be a string and mcpServers a list")
        if not os.path.isabs(cwd):
            raise RpcError(INVALID_PARAMS, "cwd must be absolute")
        return cwd

    def new_session_id(self) -> str:
        return f"s{next(self.counter)}"

    def on_session_new(self, params: dict[str, Any]) -> dict[str, Any]:
        cwd = self.check_cwd(params)
        session = Session(self.new_session_id(), cwd)
        self.sessions[session.id] = session
        self.connect_mcp(session, params.get("mcpServers") or [])
        return {"sessionId": session.id, **self.session_state(session)}

    def connect_mcp(self, session: Session, servers: list[Any]) -> None:
        for server in servers:
            if not isinstance(server, dict) or "command" not in server:
                continue
            proc = subprocess.Popen(
                [server["command"], *server.get("args", [])],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            session.mcp.append(proc)
            hello = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": self.name, "version": "1.0"},
                },
            }
            assert proc.stdin is not None
            proc.stdin.write(json.dumps(hello).encode() + b"\n")
            proc.stdin.flush()

    def session(self, params: dict[str, Any]) -> Session:
        session = self.sessions.get(str(params.get("sessionId")))
        if session is None:
            raise RpcError(NOT_FOUND, f"unknown session {params.get('sessionId')!r}")
        return session

    def on_session_load(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self.session(params)
        self.check_cwd(params)
        self.replay(session)
        return self.session_state(session)

    def replay(self, session: Session) -> None:
        for update in session.history:
            self.update(session, update)

    def on_session_list(self, params: dict[str, Any]) -> dict[str, Any]:
        cwd = params.get("cwd")
        cursor = params.get("cursor")
        start = 0
        if cursor is not None:
            if not (isinstance(cursor, str) and cursor.startswith("page:")):
                raise RpcError(INVALID_PARAMS, "invalid cursor")
            start = int(cursor[5:])
        matching = [s for s in self.sessions.values() if cwd is None or s.cwd == cwd]
        page = matching[start : start + 2]
        result: dict[str, Any] = {"sessions": [self.session_info(s) for s in page]}
        if start + 2 < len(matching):
            result["nextCursor"] = f"page:{start + 2}"
        return result

    def session_info(self, session: Session) -> dict[str, Any]:
        return {"sessionId": session.id, "cwd": session.cwd}

    def on_session_set_mode(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self.session(params)
        if params.get("modeId") not in [m["id"] for m in MODES]:
            raise RpcError(INVALID_PARAMS, "unknown mode")
        session.mode = str(params["modeId"])
        return {}

    def on_session_set_config_option(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self.session(params)
        config_id, value = params.get("configId"), params.get("value")
        if config_id == "model" and value in MODELS:
            session.model = str(value)
        elif config_id == "verbose" and isinstance(value, bool) and self.boolean_options():
            session.verbose = value
        else:
            raise RpcError(INVALID_PARAMS, "unknown config option or value")
        return {"configOptions": self.config_options(session)}

    # -- prompt turns

    def run_prompt(self, request_id: Any, params: dict[str, Any]) -> None:
        try:
            session = self.session(params)
            blocks = self.check_prompt(params)
        except RpcError as exc:
            self.respond_error(request_id, exc.code, exc.message)
            return
        text = " ".join(b.get("text", "") for b in blocks if b.get("type") == "text").strip()
        session.cancel.clear()
        session.running = True
        self.prompt_requests[request_id] = session
        try:
            stop = self.turn(session, text)
        finally:
            session.running = False
            self.prompt_requests.pop(request_id, None)
        self.end_turn(request_id, session, stop)

    def check_prompt(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        blocks = params.get("prompt")
        if not isinstance(blocks, list):
            raise RpcError(INVALID_PARAMS, "prompt must be a list")
        prompt_caps = self.capabilities()["promptCapabilities"]
        needs = {"image": "image", "audio": "audio", "resource": "embeddedContext"}
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind in needs and not prompt_caps.get(needs[kind]):
                raise RpcError(INVALID_PARAMS, f"{kind} content is not supported")
            if kind not in ("text", "resource_link", *needs):
                raise RpcError(INVALID_PARAMS, f"unknown content {kind!r}")
        return [b for b in blocks if isinstance(b, dict)]

    def end_turn(self, request_id: Any, session: Session, stop: str) -> None:
        self.respond(request_id, {"stopReason": stop})

    def turn(self, session: Session, text: str) -> str:
        session.history.append(
            {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}}
        )
        if text == "slow":
            return self.slow_turn(session)
        if text == "tools":
            return self.tools_turn(session)
        self.say(session, f"You said: {text}")
        return "end_turn"

    def slow_turn(self, session: Session) -> str:
        self.say(session, "working")
        if session.cancel.wait(30):
            return self.cancelled(session)
        return "end_turn"

    def cancelled(self, session: Session) -> str:
        return "cancelled"

    # -- the tools turn (the full-capabilities run)

    def tool_call_id(self, session: Session) -> str:
        return f"call-{next(self.counter)}"

    def permission_options(self) -> list[dict[str, Any]]:
        return [
            {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
            {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
        ]

    def file_path(self, session: Session) -> str:
        return os.path.join(session.cwd, "acp-check.txt")

    def tools_turn(self, session: Session) -> str:
        call_id = self.tool_call_id(session)
        path = self.file_path(session)
        self.update(
            session,
            {
                "sessionUpdate": "tool_call",
                "toolCallId": call_id,
                "title": "Write a file",
                "kind": "edit",
                "status": "pending",
                "locations": [{"path": path, "line": 1}],
                "content": [{"type": "diff", "path": path, "newText": "hello\n"}],
            },
        )
        answer = self.call(
            "session/request_permission",
            {
                "sessionId": session.id,
                "toolCall": {"toolCallId": call_id},
                "options": self.permission_options(),
            },
        )
        outcome = (answer.get("result") or {}).get("outcome") or {}
        if outcome.get("optionId") != "allow":
            self.update(
                session,
                {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "failed"},
            )
            return "end_turn"
        self.progress(session, call_id)
        fs = self.client_caps.get("fs") or {}
        if fs.get("writeTextFile"):
            self.call(
                "fs/write_text_file", {"sessionId": session.id, "path": path, "content": "hello\n"}
            )
        if fs.get("readTextFile"):
            self.call(
                "fs/read_text_file", {"sessionId": session.id, "path": path, "line": 1, "limit": 1}
            )
        if self.client_caps.get("terminal") is True:
            self.use_terminal(session, call_id)
        self.update(
            session,
            {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed"},
        )
        return "end_turn"

    def progress(self, session: Session, call_id: str) -> None:
        self.update(
            session,
            {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "in_progress"},
        )

    def use_terminal(self, session: Session, call_id: str) -> None:
        created = self.call(
            "terminal/create",
            {"sessionId": session.id, "command": "echo", "args": ["hi"], "cwd": session.cwd},
        )
        terminal_id = (created.get("result") or {}).get("terminalId")
        if not isinstance(terminal_id, str):
            return
        self.update(
            session,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "content": [{"type": "terminal", "terminalId": terminal_id}],
            },
        )
        ids = {"sessionId": session.id, "terminalId": terminal_id}
        self.call("terminal/wait_for_exit", ids)
        self.call("terminal/output", ids)
        self.release_terminal(ids)

    def release_terminal(self, ids: dict[str, Any]) -> None:
        self.call("terminal/release", ids)


def main(agent_class: type[Agent] = Agent) -> None:
    agent_class().run()


if __name__ == "__main__":
    main()
