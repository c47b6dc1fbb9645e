"""A correct one-shot ACP client for the ``acp check --client`` corpus (standard library only).

    python _client.py [--prompt TEXT] -- AGENT ARGS...

It starts the agent, initializes (fs and terminals offered), opens a session in its
working directory, sends the prompt, prints the agent's message chunks and exits: 0 after
``end_turn``, 10 after ``cancelled``, 1 when the agent answers an error or dies, 4 when
it speaks another protocol version. It serves files inside its folder only (links
resolved, version control folders never written), runs terminals with an allow-listed
environment inside the folder, honours ``outputByteLimit``, answers permission requests
by allowing them (``cancelled`` once the turn is cancelled: Ctrl-C sends
``session/cancel``), and survives anything the agent writes.

Each file beside this one plants one defect in it by overriding one method or setting;
its ``FAILS`` names the checks that must fail with the requirement ids each reports.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

FAILS: dict[str, tuple[str, ...]] = {}

DEAD = object()
"""What a call gets when the agent is gone."""


def crash(reason: str) -> None:
    """Die the way a client with an unhandled exception does."""
    print(f"Traceback (most recent call last):\nRuntimeError: {reason}", file=sys.stderr)
    sys.stderr.flush()
    os._exit(70)


class Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Terminal:
    """A command's output, read as it comes, the oldest dropped past the byte limit."""

    truncate_at_characters = True

    def __init__(self, process: subprocess.Popen[bytes], limit: int | None) -> None:
        self.process = process
        self.limit = limit
        self.output = bytearray()
        self.truncated = False
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()

    def read(self) -> None:
        assert self.process.stdout is not None
        while True:
            data = self.process.stdout.read1(65536)
            if not data:
                return
            self.keep(data)

    def keep(self, data: bytes) -> None:
        self.output += data
        if self.limit is not None and len(self.output) > self.limit:
            del self.output[: len(self.output) - self.limit]
            self.truncated = True
            if self.truncate_at_characters:
                while self.output and self.output[0] & 0xC0 == 0x80:
                    del self.output[0]

    def text(self) -> str:
        return self.output.decode("utf-8", "replace")

    def wait(self) -> dict[str, Any]:
        code = self.process.wait()
        self.reader.join()
        return {"exitCode": code} if code >= 0 else {"signal": signal.Signals(-code).name}


class Client:
    max_line = 1 << 20
    initialize_timeout: float | None = 60.0
    permission_delay = 0.0
    env_names = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TERM", "SYSTEMROOT")
    protected = (".git", ".hg", ".svn")
    protocol_version: Any = 1

    def __init__(self, argv: list[str], prompt: str) -> None:
        self.argv = argv
        self.prompt = prompt
        self.cwd = os.getcwd()
        self.root = os.path.realpath(self.cwd)
        self.lock = threading.Lock()
        self.turn_lock = threading.Lock()
        self.pending: dict[Any, queue.Queue[Any]] = {}
        self.next_id = 0
        self.session: str | None = None
        self.cancelled = threading.Event()
        self.terminals: dict[str, Terminal] = {}
        self.dead = False
        self.turn_over = False
        self.agent: subprocess.Popen[bytes]

    # ------------------------------------------------------------ the pipes

    def start(self) -> None:
        self.agent = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        threading.Thread(target=self.read_stdout, daemon=True).start()
        threading.Thread(target=self.drain_stderr, daemon=True).start()
        threading.Thread(target=self.watch_exit, daemon=True).start()

    def write(self, message: dict[str, Any]) -> None:
        data = self.encode({"jsonrpc": "2.0", **message})
        assert self.agent.stdin is not None
        with self.lock:
            try:
                self.agent.stdin.write(data)
                self.agent.stdin.flush()
            except (BrokenPipeError, ValueError):
                pass

    def encode(self, message: dict[str, Any]) -> bytes:
        return json.dumps(message, separators=(",", ":")).encode() + b"\n"

    def read_stdout(self) -> None:
        assert self.agent.stdout is not None
        while True:
            line = self.agent.stdout.readline(self.max_line + 1)
            if not line:
                break
            if len(line) > self.max_line and not line.endswith(b"\n"):
                self.oversize(line)
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self.not_json(line)
                continue
            if isinstance(message, dict):
                self.dispatch(message)
        self.agent_gone()

    def oversize(self, head: bytes) -> None:
        """Skip the rest of a line longer than ``max_line``."""
        assert self.agent.stdout is not None
        while not head.endswith(b"\n"):
            head = self.agent.stdout.readline(self.max_line)
            if not head:
                return
        print("client: dropped an oversize line", file=sys.stderr)

    def not_json(self, line: bytes) -> None:
        pass

    def drain_stderr(self) -> None:
        assert self.agent.stderr is not None
        while self.agent.stderr.read(65536):
            pass

    def watch_exit(self) -> None:
        while self.agent.poll() is None:
            time.sleep(0.05)
        time.sleep(0.2)  # what it wrote before exiting arrives first
        self.agent_gone()

    def agent_gone(self) -> None:
        self.dead = True
        for waiting in list(self.pending.values()):
            waiting.put(DEAD)

    # ------------------------------------------------------------ JSON-RPC

    def new_id(self) -> Any:
        self.next_id += 1
        return self.next_id

    def call(
        self,
        method: str,
        params: dict[str, Any],
        timeout: float | None = None,
        before: Callable[[], None] | None = None,
    ) -> Any:
        """Send a request and wait for its answer (``before`` runs while it is out)."""
        rid = self.new_id()
        waiting: queue.Queue[Any] = queue.Queue()
        self.pending[rid] = waiting
        self.write({"id": rid, "method": method, "params": params})
        if before is not None:
            before()
        if self.dead:
            return DEAD
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while deadline is None or time.monotonic() < deadline:
                # short waits: a signal may land on another thread, and its handler runs
                # only when this one runs Python code
                try:
                    return waiting.get(timeout=0.05)
                except queue.Empty:
                    continue
            return None
        finally:
            self.pending.pop(rid, None)

    def dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if not isinstance(method, str):
            waiting = self.pending.get(message.get("id"))
            if waiting is not None:
                waiting.put(message)
            return
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if "id" not in message:
            self.notification(method, params)
            return
        threading.Thread(
            target=self.serve, args=(message["id"], method, params), daemon=True
        ).start()

    def serve(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        if method == "session/request_permission":
            # decided and answered in one step against the cancel: an answer written after
            # session/cancel is always "cancelled" (CANCEL-002)
            with self.turn_lock:
                self.serve_now(rid, method, params)
        else:
            self.serve_now(rid, method, params)

    def serve_now(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        handler = self.handlers().get(method)
        try:
            if handler is None:
                raise Refused(-32601, f"method not found: {method}")
            result = handler(params)
        except Refused as exc:
            self.answer_error(rid, exc.code, exc.message)
            return
        except Exception as exc:  # a bug here must not kill the client
            self.answer_error(rid, -32603, f"internal error: {type(exc).__name__}")
            return
        self.answer(rid, result)

    def answer(self, rid: Any, result: Any) -> None:
        self.write({"id": rid, "result": result})

    def answer_error(self, rid: Any, code: int, message: str) -> None:
        self.write({"id": rid, "error": {"code": code, "message": message}})

    def handlers(self) -> dict[str, Any]:
        return {
            "session/request_permission": self.permission,
            "fs/read_text_file": self.read_file,
            "fs/write_text_file": self.write_file,
            "terminal/create": self.create_terminal,
            "terminal/output": self.terminal_output,
            "terminal/wait_for_exit": self.wait_for_exit,
            "terminal/kill": self.kill_terminal,
            "terminal/release": self.release_terminal,
        }

    def notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "session/update":
            update = params.get("update")
            if isinstance(update, dict):
                self.on_update(update)

    def on_update(self, update: dict[str, Any]) -> None:
        content = update.get("content")
        if update.get("sessionUpdate") == "agent_message_chunk" and isinstance(content, dict):
            text = content.get("text")
            if isinstance(text, str):
                sys.stdout.write(text)

    # ------------------------------------------------------------ what the agent asks

    def permission(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.permission_delay:
            self.cancelled.wait(self.permission_delay)
        if self.cancelled.is_set():
            return {"outcome": {"outcome": "cancelled"}}
        options = [o for o in params.get("options", []) if isinstance(o, dict)]
        chosen = next((o for o in options if o.get("kind") == "allow_once"), None)
        if chosen is None:
            return {"outcome": {"outcome": "cancelled"}}
        return {"outcome": {"outcome": "selected", "optionId": chosen.get("optionId")}}

    def inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return real == self.root or real.startswith(self.root + os.sep)

    def resolve(self, path: Any) -> str:
        if not isinstance(path, str) or not os.path.isabs(path):
            raise Refused(-32602, "the path must be absolute")
        if not self.inside(path):
            raise Refused(-32602, "the path is outside the workspace")
        return os.path.realpath(path)

    def file_path(self, path: Any) -> str:
        """Where a file request may go (terminals' folders go through :meth:`resolve`)."""
        return self.resolve(path)

    def read_file(self, params: dict[str, Any]) -> dict[str, Any]:
        path = self.file_path(params.get("path"))
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
        except FileNotFoundError:
            raise Refused(-32002, "resource not found") from None
        return {"content": self.lines(text, params.get("line"), params.get("limit"))}

    def lines(self, text: str, line: Any, limit: Any) -> str:
        if line is None and limit is None:
            return text
        rows = text.splitlines(keepends=True)
        start = max(0, (line or 1) - 1)
        return "".join(rows[start : start + limit if limit is not None else None])

    def write_file(self, params: dict[str, Any]) -> dict[str, Any]:
        path = self.file_path(params.get("path"))
        if self.is_protected(path):
            raise Refused(-32602, "version control internals are not written")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(str(params.get("content")))
        return {}

    def is_protected(self, path: str) -> bool:
        parts = os.path.relpath(path, self.root).split(os.sep)
        return any(part in self.protected for part in parts)

    def terminal_env(self, extra: Any) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k in self.env_names}
        for item in extra or []:
            env[str(item.get("name"))] = str(item.get("value"))
        return env

    def terminal_cwd(self, cwd: Any) -> str:
        if cwd is None:
            return self.root
        return self.resolve(cwd)

    def create_terminal(self, params: dict[str, Any]) -> dict[str, Any]:
        process = subprocess.Popen(
            [str(params.get("command")), *map(str, params.get("args") or [])],
            cwd=self.terminal_cwd(params.get("cwd")),
            env=self.terminal_env(params.get("env")),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = self.make_terminal(process, params.get("outputByteLimit"))
        return {"terminalId": terminal_id}

    def make_terminal(self, process: subprocess.Popen[bytes], limit: int | None) -> Terminal:
        return Terminal(process, limit)

    def terminal(self, params: dict[str, Any]) -> Terminal:
        terminal = self.terminals.get(str(params.get("terminalId")))
        if terminal is None:
            raise Refused(-32002, "no such terminal")
        return terminal

    def terminal_output(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self.terminal(params)
        result: dict[str, Any] = {"output": terminal.text(), "truncated": terminal.truncated}
        if terminal.process.poll() is not None:
            result["exitStatus"] = terminal.wait()
        return result

    def wait_for_exit(self, params: dict[str, Any]) -> dict[str, Any]:
        return self.terminal(params).wait()

    def kill_terminal(self, params: dict[str, Any]) -> dict[str, Any]:
        self.kill(self.terminal(params).process)
        return {}

    def release_terminal(self, params: dict[str, Any]) -> dict[str, Any]:
        terminal = self.terminals.pop(str(params.get("terminalId")), None)
        if terminal is None:
            raise Refused(-32002, "no such terminal")
        self.kill(terminal.process)
        return {}

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """Stop a terminal's command and whatever it started: its process group (each
        command leads its own session)."""
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    # ------------------------------------------------------------ the run

    def initialize_params(self) -> dict[str, Any]:
        return {
            "protocolVersion": self.protocol_version,
            "clientCapabilities": {
                "fs": {"readTextFile": True, "writeTextFile": True},
                "terminal": True,
            },
            "clientInfo": {"name": "corpus-client", "version": "1.0"},
        }

    def open_session(self) -> Any:
        return self.call("session/new", {"cwd": self.cwd, "mcpServers": []})

    def prompt_params(self) -> dict[str, Any]:
        return {"sessionId": self.session, "prompt": [{"type": "text", "text": self.prompt}]}

    def cancel(self) -> None:
        with self.turn_lock:
            if self.session is not None and not self.cancelled.is_set():
                self.cancelled.set()
                self.write({"method": "session/cancel", "params": {"sessionId": self.session}})

    def failed(self, answer: Any, what: str) -> int | None:
        """The exit status when ``answer`` is not a result."""
        if answer is DEAD:
            print(
                f"client: the agent died during {what} (status {self.agent.poll()})",
                file=sys.stderr,
            )
            return 1
        if answer is None:
            print(f"client: no answer to {what}", file=sys.stderr)
            return 1
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            self.show_error(what, error)
            return 1
        return None

    def show_error(self, what: str, error: dict[str, Any]) -> None:
        print(
            f"client: {what} failed: {error.get('message')} ({error.get('code')})", file=sys.stderr
        )

    def handshake(self) -> int | None:
        """initialize and session/new; an exit status when they failed."""
        answer = self.call("initialize", self.initialize_params(), self.initialize_timeout)
        status = self.failed(answer, "initialize")
        if status is not None:
            return status
        version = answer["result"].get("protocolVersion")
        if not self.version_ok(version):
            return 4
        answer = self.open_session()
        status = self.failed(answer, "session/new")
        if status is not None:
            return status
        self.session = answer["result"]["sessionId"]
        return None

    def run(self) -> int:
        self.start()
        status = self.handshake()
        if status is not None:
            return status
        signal.signal(signal.SIGINT, lambda *_: threading.Thread(target=self.cancel).start())
        answer = self.send_prompt()
        self.turn_over = True
        status = self.failed(answer, "session/prompt")
        if status is not None:
            return status
        stop = answer["result"].get("stopReason")
        sys.stdout.write(f"\n[{stop}]\n")
        return self.after_turn({"end_turn": 0, "cancelled": 10}.get(stop, 1))

    def send_prompt(self) -> Any:
        return self.call("session/prompt", self.prompt_params())

    def version_ok(self, version: Any) -> bool:
        if version == 1:
            return True
        print(f"client: the agent speaks protocol version {version}, not 1", file=sys.stderr)
        return False

    def after_turn(self, status: int) -> int:
        return status

    def close(self) -> None:
        self.stop_terminals()
        try:
            assert self.agent.stdin is not None
            self.agent.stdin.close()
        except (BrokenPipeError, OSError):
            pass
        try:
            self.agent.wait(1.0)
        except subprocess.TimeoutExpired:
            os.killpg(self.agent.pid, signal.SIGKILL)

    def stop_terminals(self) -> None:
        for terminal in self.terminals.values():
            self.kill(terminal.process)


def main(cls: type[Client] = Client) -> None:
    args = sys.argv[1:]
    prompt = "hello"
    if args[:1] == ["--prompt"]:
        prompt, args = args[1], args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    client = cls(args, prompt)
    try:
        status = client.run()
    finally:
        sys.stdout.flush()
        client.close()
    os._exit(status)


if __name__ == "__main__":
    main()
