"""Driving a client under test: its process, and the scripted agent it starts.

``acp check --client 'COMMAND {agent}'`` runs the client command once per scenario. The
``{agent}`` placeholder becomes the command of :mod:`.scripted_agent`, a relay that
connects back to the checker's :class:`ControlServer` (a Unix socket in the run's
private folder) and hands over both ends of its stdio. :class:`ScriptedAgent` is the
checker's side of one such relay: it writes what a scenario wants on the client's input,
raw or as JSON-RPC, and records every line the client writes (and the agent's own lines)
on the run's :class:`~..wire.Wire`, one process label per scenario. :class:`ClientProcess`
is the client itself: started in its own process group in the scenario's folder, its
stdout and stderr drained into a bounded capture (so a chatty client never blocks on a
full pipe), its exit polled, and stopped group-wide at the end.

Nothing here waits without a bound: every wait takes a timeout and also ends when the
client closes the agent's input or the relay goes away.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._waits import within
from ..wire import Waiters, Wire, WireEntry, dict_of, id_key
from . import scripted_agent

__all__ = [
    "ClientProcess",
    "ControlServer",
    "ScriptedAgent",
    "client_argv",
    "scripted_agent_command",
]

PLACEHOLDERS = ("{agent}", "{agent_line}", "{prompt}", "{cwd}")
"""What a client command may contain; ``{agent}`` or ``{agent_line}`` is required."""
CAPTURE_BYTES = 256 * 1024
"""Bytes of the client's output kept from its start and from its end."""
EXIT_POLL = 0.05
"""Seconds between looks at the client's exit status (see :meth:`ClientProcess.wait`)."""
CONTROL_LINE_LIMIT = 128 * 1024 * 1024
"""Longest control line: one of the client's lines, base64-encoded (a terminal's output
in an answer can be megabytes)."""
STOP_GRACE = 1.0
"""Seconds the client's process group gets after SIGTERM before SIGKILL."""
OUTPUT_SETTLE = 1.0
"""Seconds an exited client's output pipes get to deliver their last bytes."""


def scripted_agent_command(control: str, scenario: str) -> list[str]:
    """The argv of the scripted agent for one scenario: this interpreter, isolated mode."""
    return [
        sys.executable,
        "-I",
        str(Path(scripted_agent.__file__).resolve()),
        "--control",
        control,
        "--scenario",
        scenario,
    ]


def client_argv(command: str, agent: Sequence[str], prompt: str, cwd: str) -> list[str]:
    """The client's argv: ``command`` split like a shell would, its placeholders filled.

    ``{agent}`` standing alone becomes the agent's argv, word by word; ``{agent_line}``
    becomes one word holding the agent's command line (for clients that take it as a
    string); ``{prompt}`` and ``{cwd}`` are replaced wherever they appear. Raises
    ``ValueError`` for a command without an agent placeholder or with ``{agent}`` inside
    a longer word.
    """
    words = shlex.split(command)
    if not any("{agent}" in w or "{agent_line}" in w for w in words):
        raise ValueError("the client command has no {agent} (or {agent_line}) placeholder")
    argv: list[str] = []
    for word in words:
        if word == "{agent}":
            argv.extend(agent)
            continue
        if "{agent}" in word:
            raise ValueError(
                f"{{agent}} must stand alone as a word (got {word!r}); use {{agent_line}} "
                "for the agent's command line inside one argument"
            )
        argv.append(
            word.replace("{agent_line}", shlex.join(agent))
            .replace("{prompt}", prompt)
            .replace("{cwd}", cwd)
        )
    return argv


class _Capture:
    """The first and the last :data:`CAPTURE_BYTES` of a stream, and its total size."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = CAPTURE_BYTES - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            del self.tail[: max(0, len(self.tail) - CAPTURE_BYTES)]

    def text(self) -> str:
        gap = "\n[...]\n" if self.total > len(self.head) + len(self.tail) else ""
        return (bytes(self.head) + gap.encode() + bytes(self.tail)).decode("utf-8", "replace")


class ClientProcess:
    """The client under test, in its own process group, its output drained."""

    def __init__(self, argv: Sequence[str], cwd: str, env: Mapping[str, str]) -> None:
        self.argv = list(argv)
        self.cwd = cwd
        self.env = dict(env)
        self.process: asyncio.subprocess.Process | None = None
        self.started = 0.0
        self.ended: float | None = None
        self.stdout = _Capture()
        self.stderr = _Capture()
        self._drains: list[asyncio.Task[None]] = []

    async def start(self) -> str | None:
        """Start the client; the reason it could not be started, or None."""
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return f"the client command could not be started: {exc}"
        self.started = time.monotonic()
        assert self.process.stdout is not None and self.process.stderr is not None
        self._drains = [
            asyncio.ensure_future(self._drain(self.process.stdout, self.stdout)),
            asyncio.ensure_future(self._drain(self.process.stderr, self.stderr)),
        ]
        return None

    @staticmethod
    async def _drain(stream: asyncio.StreamReader, into: _Capture) -> None:
        while True:
            data = await stream.read(1 << 16)
            if not data:
                return
            into.add(data)

    @property
    def returncode(self) -> int | None:
        return None if self.process is None else self.process.returncode

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    async def wait(self, timeout: float) -> int | None:
        """The exit status, or None if the client still runs after ``timeout`` seconds.

        Polled rather than awaited: ``Process.wait()`` also waits for the client's
        output pipes to close, which a grandchild (the agent's own) may keep open.
        """
        deadline = time.monotonic() + timeout
        while self.returncode is None and self.process is not None:
            if time.monotonic() >= deadline:
                return None
            await asyncio.sleep(EXIT_POLL)
        if self.ended is None:
            self.ended = time.monotonic()
            # What it printed last may still be in the pipes: read to their end, bounded
            # (a grandchild holding them open must not stall the verdict).
            pending = [t for t in self._drains if not t.done()]
            if pending:
                await asyncio.wait(pending, timeout=OUTPUT_SETTLE)
        return self.returncode

    def interrupt(self) -> None:
        """SIGINT to the client alone, as a user's Ctrl-C would."""
        if self.process is not None and self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGINT)

    def terminate(self) -> None:
        """SIGTERM to the client alone (its children are its business)."""
        if self.process is not None and self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.terminate()

    async def stop(self) -> None:
        """Stop the client's whole process group (it, its agent, its terminals)."""
        if self.process is None:
            return
        pgid = self.process.pid
        for sig, wait in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, STOP_GRACE)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
            if await self.wait(wait) is not None:
                break
        for task in self._drains:
            task.cancel()
        await asyncio.gather(*self._drains, return_exceptions=True)

    def output(self) -> str:
        """What the client printed: stdout, then stderr (bounded)."""
        return self.stdout.text() + "\n" + self.stderr.text()

    def describe_end(self) -> str:
        code = self.returncode
        if code is None:
            return "it is still running"
        if code < 0:
            try:
                return f"it was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"it was killed by signal {-code}"
        return f"it exited with status {code}"


@dataclass
class _Output:
    seq: int
    done: asyncio.Future[bool]
    size: int


@dataclass
class ScriptedAgent:
    """The checker's side of one scripted agent: what the client wrote, and what to write."""

    scenario: str
    wire: Wire
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    input_ended: asyncio.Event = field(default_factory=asyncio.Event)
    """The client closed the agent's stdin."""
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    """The relay's control connection closed: the agent process ended."""
    pid: int | None = None
    cwd: str | None = None
    signals: list[str] = field(default_factory=list[str])
    starts: int = 0
    """Agent processes the client started in this scenario."""
    unterminated: list[bytes] = field(default_factory=list[bytes])
    """Lines the client ended without a newline."""
    input_ended_at: float | None = None
    op_of: dict[int, int] = field(default_factory=dict[int, int])
    """The output op that carried each line the agent sent (by ``id`` of its entry)."""
    read_begun: dict[int, int] = field(default_factory=dict[int, int])
    """For each line of the client, the last output op begun when the agent read it."""
    grandchildren: list[asyncio.StreamWriter] = field(default_factory=list[asyncio.StreamWriter])
    _writer: asyncio.StreamWriter | None = None
    _outputs: dict[int, _Output] = field(default_factory=dict[int, _Output])
    _seq: int = 0
    _next_id: int = 0
    _partial: bytes = b""
    waiters: Waiters = field(init=False)
    """Who waits for a line of this scenario."""
    _grandchild_pid: asyncio.Future[int] | None = None

    def __post_init__(self) -> None:
        self.waiters = Waiters(self.wire, self.scenario)

    # ------------------------------------------------------------ the control connection

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self.starts += 1
        self.connected.set()
        try:
            while True:
                raw = await reader.readline()
                if not raw:
                    break
                with contextlib.suppress(ValueError):
                    self._event(dict_of(json.loads(raw)))
        except (ConnectionError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            if not self.input_ended.is_set():
                self._end_input()
            self.gone.set()
            self.waiters.ended()
            for output in self._outputs.values():
                if not output.done.done():
                    output.done.set_result(False)

    def _event(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "line":
            data = self._partial + base64.b64decode(str(event.get("data", "")))
            if not event.get("end"):
                self._partial = data
                return
            self._partial = b""
            entry = self._record("to_agent", data.rstrip(b"\n").removesuffix(b"\r"))
            self.read_begun[id(entry)] = int(event.get("begun") or 0)
        elif kind == "eof":
            if self._partial:
                self.unterminated.append(self._partial)
                self._record("to_agent", self._partial)
                self._partial = b""
            self._end_input()
        elif kind == "signal":
            self.signals.append(str(event.get("signal")))
        elif kind == "written":
            output = self._outputs.get(int(event.get("seq") or 0))
            if output is not None and not output.done.done():
                output.done.set_result(bool(event.get("ok")))
        elif kind == "grandchild":
            if self._grandchild_pid is not None and not self._grandchild_pid.done():
                self._grandchild_pid.set_result(int(event.get("pid") or 0))

    def _end_input(self) -> None:
        self.input_ended_at = time.monotonic()
        self.input_ended.set()
        self.waiters.ended()

    def _record(self, direction: Any, raw: bytes, owner: str | None = None) -> WireEntry:
        entry = self.wire.add(self.scenario, direction, raw, time.monotonic())
        entry.owner = owner
        self.waiters.recorded(entry)
        return entry

    # ------------------------------------------------------------ writing

    async def _op(self, op: dict[str, Any]) -> None:
        if self._writer is None or self.gone.is_set():
            return
        with contextlib.suppress(ConnectionError, RuntimeError):
            self._writer.write(json.dumps(op, separators=(",", ":")).encode() + b"\n")
            await self._writer.drain()

    async def write(
        self, parts: Sequence[dict[str, Any]], *, fd: int = 1, size: int = 0
    ) -> _Output:
        """Queue bytes for the agent's stdout (or stderr); see :meth:`written`."""
        self._seq += 1
        output = _Output(self._seq, asyncio.get_running_loop().create_future(), size)
        self._outputs[self._seq] = output
        await self._op({"op": "write", "fd": fd, "seq": self._seq, "parts": list(parts)})
        if self.gone.is_set() and not output.done.done():
            output.done.set_result(False)
        return output

    async def written(self, output: _Output, timeout: float) -> bool:
        """Whether the agent got ``output`` into its pipe within ``timeout`` seconds."""
        try:
            return await within(asyncio.shield(output.done), timeout)
        except asyncio.TimeoutError:
            return False

    async def send_raw(self, data: bytes, *, owner: str | None = None) -> _Output:
        """One line (``data`` plus a newline) on the agent's stdout, recorded as sent."""
        entry = self._record("from_agent", data, owner)
        self.op_of[id(entry)] = self._seq + 1
        return await self.write(
            [{"b64": base64.b64encode(data + b"\n").decode()}], size=len(data) + 1
        )

    def unseen(self, line: WireEntry, message: WireEntry) -> bool:
        """Whether the client wrote ``line`` before the agent began writing ``message``:
        it cannot have read it. (False when unsure: the message may still be in the pipe.)"""
        op = self.op_of.get(id(message))
        begun = self.read_begun.get(id(line))
        return op is not None and begun is not None and begun < op

    async def send_big_line(
        self, prefix: bytes, filler: bytes, count: int, suffix: bytes, *, record: bytes
    ) -> _Output:
        """A line of ``prefix``, ``filler`` times ``count``, ``suffix``, made by the agent.

        ``record`` stands for it on the wire: the same message with the filler left out.
        """
        size = len(prefix) + len(filler) * count + len(suffix) + 1
        self.op_of[id(self._record("from_agent", record))] = self._seq + 1
        return await self.write(
            [
                {"b64": base64.b64encode(prefix).decode()},
                {"repeat": base64.b64encode(filler).decode(), "count": count},
                {"b64": base64.b64encode(suffix + b"\n").decode()},
            ],
            size=size,
        )

    async def flood_stderr(self, size: int) -> _Output:
        line = b"acp check: stderr flood " + b"#" * 999 + b"\n"
        return await self.write(
            [{"repeat": base64.b64encode(line).decode(), "count": max(1, size // len(line))}],
            fd=2,
            size=size,
        )

    async def send(self, message: dict[str, Any], *, owner: str | None = None) -> _Output:
        """A JSON-RPC message on the agent's stdout (``jsonrpc`` added)."""
        body = {"jsonrpc": "2.0", **message}
        return await self.send_raw(json.dumps(body, separators=(",", ":")).encode(), owner=owner)

    async def notify(self, method: str, params: Any, *, owner: str | None = None) -> None:
        await self.send({"method": method, "params": params}, owner=owner)

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def request(
        self,
        method: str,
        params: Any,
        timeout: float,
        *,
        request_id: Any = None,
        owner: str | None = None,
    ) -> WireEntry | None:
        """Send a request; its answer, or None (no answer in time, or the client went away).

        With ``owner``, the request and its answers are that check's alone: the checks
        over the whole recording leave them be.
        """
        rid = self.new_id() if request_id is None else request_id
        since = len(self.wire.entries)
        if owner is not None:
            self.wire.claim(self.scenario, rid, owner)
        await self.send({"id": rid, "method": method, "params": params})
        return await self.wait_for(lambda e: _answers(e, rid), timeout, since)

    async def answer(self, request: WireEntry, result: Any) -> None:
        await self.send({"id": (request.message or {}).get("id"), "result": result})

    async def fail(self, request: WireEntry, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        await self.send({"id": (request.message or {}).get("id"), "error": error})

    async def exit(self, status: int) -> None:
        """The agent exits with ``status`` once what was queued before is written."""
        await self._op({"op": "exit", "status": status})

    async def spawn_grandchild(self, seconds: float, timeout: float) -> int | None:
        """Start a grandchild holding the agent's stdout; its pid once it runs."""
        self._grandchild_pid = asyncio.get_running_loop().create_future()
        await self._op({"op": "spawn", "seconds": seconds})
        try:
            return await within(asyncio.shield(self._grandchild_pid), timeout)
        except asyncio.TimeoutError:
            return None

    # ------------------------------------------------------------ reading

    async def wait_for(
        self, predicate: Callable[[WireEntry], bool], timeout: float, since: int = 0
    ) -> WireEntry | None:
        """The first line of this scenario from index ``since`` that matches, or None.

        None also when the client closes the agent's input first: nothing more can come.
        """
        if self.input_ended.is_set():
            return next((e for e in self.wire.of(self.scenario, since) if predicate(e)), None)
        return await self.waiters.first(predicate, since, timeout)

    async def wait_request(self, method: str, timeout: float, since: int = 0) -> WireEntry | None:
        """The client's next request (or notification) for ``method``."""
        return await self.wait_for(
            lambda e: e.direction == "to_agent" and e.method == method, timeout, since
        )

    def release(self) -> None:
        """Let the grandchildren go and close the control connection (the relay exits)."""
        for writer in (*self.grandchildren, *((self._writer,) if self._writer else ())):
            with contextlib.suppress(Exception):
                writer.close()
        self.grandchildren.clear()


def _answers(entry: WireEntry, request_id: Any) -> bool:
    m = entry.message
    return (
        entry.direction == "to_agent"
        and m is not None
        and "method" not in m
        and ("result" in m or "error" in m)
        and "id" in m
        and id_key(m["id"]) == id_key(request_id)
    )


class ControlServer:
    """The Unix socket the scripted agents of a run connect to, one handle per scenario."""

    def __init__(self, folder: str) -> None:
        self.path = os.path.join(folder, "control.sock")
        self.agents: dict[str, ScriptedAgent] = {}
        self.extra: list[str] = []
        """Scenarios whose client started the agent more than once."""
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        if len(os.fsencode(self.path)) > 100:
            raise OSError(f"the control socket path is too long for a Unix socket: {self.path}")
        self._server = await asyncio.start_unix_server(
            self._connected, self.path, limit=CONTROL_LINE_LIMIT
        )
        os.chmod(self.path, 0o600)

    def expect(self, scenario: str, wire: Wire) -> ScriptedAgent:
        agent = self.agents[scenario] = ScriptedAgent(scenario, wire)
        return agent

    async def _connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            with contextlib.suppress(ValueError):
                hello = dict_of(json.loads(await within(reader.readline(), 10.0)))
                agent = self.agents.get(str(hello.get("scenario")))
                if agent is None:
                    writer.close()
                elif hello.get("role") == "grandchild":
                    agent.grandchildren.append(writer)
                elif agent.connected.is_set():
                    # A second agent process: keep the first one's conversation, stop this.
                    agent.starts += 1
                    self.extra.append(agent.scenario)
                    writer.close()
                else:
                    agent.pid = hello.get("pid") if isinstance(hello.get("pid"), int) else None
                    agent.cwd = hello.get("cwd") if isinstance(hello.get("cwd"), str) else None
                    await agent.serve(reader, writer)
        except (asyncio.TimeoutError, ConnectionError):
            writer.close()
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def close(self) -> None:
        for agent in self.agents.values():
            agent.release()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await within(self._server.wait_closed(), 2.0)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
