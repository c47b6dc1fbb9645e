"""``acp inspect``: a transparent stdio proxy that logs the ACP traffic it carries.

Put it in front of an agent in the editor's agent command::

    acp inspect [--json] [--log FILE] -- real-agent ARGS...

Bytes go through unchanged in both directions; a copy of every line is decoded and
logged (direction, time since start, method, request id, latency of responses, session
updates rendered by the renderers :mod:`acpwire.cli.render` shares with ``acp chat``),
to ``FILE`` or stderr, or as JSON lines with ``--json``. The proxy's own stdout carries
the agent's output and nothing else: before anything runs, file descriptor 1 is moved
aside for the forwarded bytes and pointed at stderr, so a stray print cannot corrupt
the protocol. The agent's stderr is passed through. What the peers sent is logged
made safe for a terminal (:mod:`acpwire.cli.sanitize`): no control sequence of theirs
reaches it.

Log records are in wire order: each line is logged before it is passed on (see
``_pump``), and times are taken under one lock. Ctrl-C is forwarded to the agent
(which runs in a session of its own, so it gets it once) and the proxy keeps
carrying the traffic, so the editor's ``session/cancel`` and the agent's answer go
through; a second Ctrl-C terminates the agent.

Exit status: the agent's (128+N when killed by signal N), 3 when it cannot be started,
2 for usage errors, 130 after Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, TextIO, cast

from .sanitize import json_line, sanitize

__all__ = ["TrafficLog", "add_inspect_parser", "run_inspect"]

Sender = Literal["client", "agent"]
_ARROWS = {"client": "editor → agent", "agent": "agent → editor"}
_SUMMARY_LIMIT = 160


def add_inspect_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``inspect`` on the ``acp`` subparsers (argparse only; nothing heavy imported)."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "inspect",
        help="proxy an agent's stdio and log the decoded ACP traffic",
        description=(
            "Run as the editor's agent command: forwards stdin/stdout to the agent "
            "unchanged and logs every message. Put the agent command after `--`."
        ),
        epilog="exit status: the agent's; 3 agent not started; 2 usage; 130 interrupted",
    )
    parser.add_argument("--json", action="store_true", help="log JSON lines instead of text")
    parser.add_argument("--log", default=None, metavar="FILE", help="append the log here")
    parser.add_argument("agent", nargs=argparse.REMAINDER, help="-- AGENT_COMMAND ARGS...")
    parser.set_defaults(handler=run_inspect)
    return parser


def _short(value: Any, limit: int = _SUMMARY_LIMIT) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _as_dict(value: object) -> dict[str, Any] | None:
    """``value`` if it is a JSON object (decoded JSON objects have string keys), else None."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def _render_update_text(params: Any) -> str | None:
    """A ``session/update`` rendered by the shared renderer, as plain text (None if unknown)."""
    try:
        from acpwire import schema as s

        from .render import render_update
    except ImportError:  # no Rich: the caller falls back to a JSON summary
        return None
    try:
        note = s.convert(params, s.SessionNotification)
    except Exception:
        return None
    return render_update(note.update).plain


class TrafficLog:
    """Decodes lines of both directions and writes one log record per message.

    Thread-safe: the two pumps of the proxy call :meth:`message` concurrently.
    """

    def __init__(self, out: TextIO, *, json_lines: bool = False) -> None:
        self.out = out
        self.json_lines = json_lines
        self.started = time.monotonic()
        self._lock = threading.RLock()
        self._pending: dict[tuple[Sender, str], tuple[str, float]] = {}
        from acpwire.schema.methods import V1_UNSTABLE

        # Every v1 method: messages of unstable ones are marked as such.
        self._methods = V1_UNSTABLE

    def _write(self, text: str) -> None:
        # Called with the lock held. The log goes to a terminal as often as not: what
        # the peers sent is shown, never obeyed (JSON records escape it instead).
        if not self.json_lines:
            text = sanitize(text)
        try:
            self.out.write(text + "\n")
            self.out.flush()
        except (OSError, ValueError):
            pass  # the log is best effort; the traffic must keep flowing

    def event(self, name: str, **fields: Any) -> None:
        with self._lock:
            t = time.monotonic() - self.started
            if self.json_lines:
                self._write(json.dumps({"t": round(t, 6), "event": name, **fields}))
            else:
                extra = " ".join(f"{k}={_short(v, 200)}" for k, v in fields.items())
                self._write(f"{t:9.3f}  -- {name} {extra}".rstrip())

    def message(self, sender: Sender, raw: bytes) -> None:
        """Log one line; the time is taken under the lock, so records are in time order."""
        try:
            value = _as_dict(json.loads(raw))
        except ValueError:
            value = None
        with self._lock:
            self._message(sender, raw, value, time.monotonic())

    def _message(
        self, sender: Sender, raw: bytes, value: dict[str, Any] | None, now: float
    ) -> None:
        t = now - self.started
        record: dict[str, Any] = {"t": round(t, 6), "from": sender}
        if value is None:
            record["kind"] = "invalid"
            record["raw"] = raw.decode("utf-8", "replace")
            if self.json_lines:
                self._write(json_line(record))
            else:
                self._write(f"{t:9.3f}  {_ARROWS[sender]}  NOT JSON-RPC: {_short(record['raw'])}")
            return
        method = value.get("method")
        rid = value.get("id")
        latency: float | None = None
        if isinstance(method, str):
            kind = "request" if "id" in value else "notification"
            if kind == "request":
                self._pending[(sender, json.dumps(rid))] = (method, now)
        else:
            kind = "response"
            other: Sender = "agent" if sender == "client" else "client"
            found = self._pending.pop((other, json.dumps(rid)), None)
            if found is not None:
                method, since = found
                latency = now - since
        record.update(kind=kind, method=method, id=rid)
        spec = (
            self._methods.find(method, request=kind != "notification")
            if isinstance(method, str)
            else None
        )
        unstable = spec is not None and spec.stability == "unstable"
        if unstable:
            record["stability"] = "unstable"
        if latency is not None:
            record["latencyMs"] = round(latency * 1000, 3)
        if self.json_lines:
            record["message"] = value
            self._write(json_line(record))
            return
        summary = self._summary(kind, method, rid, value, latency)
        if unstable:
            summary = f"[unstable] {summary}"
        self._write(f"{t:9.3f}  {_ARROWS[sender]}  {summary}")

    def _summary(
        self, kind: str, method: Any, rid: Any, value: dict[str, Any], latency: float | None
    ) -> str:
        params = value.get("params")
        if kind == "request":
            return f"{method} #{rid}  {_short(params)}"
        if kind == "notification":
            update_params = _as_dict(params)
            if method == "session/update" and update_params is not None:
                rendered = _render_update_text(update_params)
                sid = update_params.get("sessionId")
                if rendered is not None:
                    return f"session/update [{sid}] {_short(rendered)}"
            return f"{method}  {_short(params)}"
        took = f" ({latency * 1000:.1f} ms)" if latency is not None else ""
        name = method if isinstance(method, str) else "response"
        if "error" in value:
            err = _as_dict(value.get("error")) or {}
            return f"{name} #{rid} -> error {err.get('code')}: {_short(err.get('message'))}{took}"
        return f"{name} #{rid} -> {_short(value.get('result'))}{took}"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _pump(
    read_fd: int,
    write_fd: int,
    on_line: Callable[[bytes], None],
    on_end: Callable[[], None],
) -> None:
    """Copy ``read_fd`` to ``write_fd`` unchanged; each complete line is logged first.

    Logging a line before passing it on keeps the log in wire order: the peer cannot
    read (let alone answer) a message before its last byte has been forwarded, which
    happens after it was logged.
    """
    from acpwire.protocol.framing import LineSplitter

    splitter = LineSplitter()
    try:
        while True:
            try:
                data = os.read(read_fd, 65536)
            except OSError:
                break
            if not data:
                break
            for line in splitter.feed(data):
                if isinstance(line, bytes):
                    on_line(line)
            try:
                _write_all(write_fd, data)
            except OSError:
                break
    finally:
        on_end()


def run_inspect(args: argparse.Namespace) -> int:
    """The ``acp inspect`` command; returns the exit status."""
    agent = list(args.agent)
    if agent and agent[0] == "--":
        agent = agent[1:]
    if not agent:
        print("acp inspect: give the agent command after --", file=sys.stderr)
        return 2
    # Keep the real stdout for the forwarded bytes only; everything else that would
    # print to fd 1 now lands on stderr.
    sys.stdout.flush()
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    log_file: TextIO = sys.stderr
    if args.log is not None:
        try:
            log_file = open(args.log, "a", encoding="utf-8")
        except OSError as exc:
            print(f"acp inspect: cannot open --log {args.log!r}: {exc}", file=sys.stderr)
            return 2
    log = TrafficLog(log_file, json_lines=args.json)
    try:
        return _proxy(agent, out_fd, log)
    finally:
        if log_file is not sys.stderr:
            log_file.close()
        os.close(out_fd)


def _proxy(agent: list[str], out_fd: int, log: TrafficLog) -> int:
    try:
        # A session of its own: the terminal's Ctrl-C reaches the agent once, through us.
        proc = subprocess.Popen(
            agent,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
            start_new_session=True,
        )
    except OSError as exc:
        print(f"acp inspect: cannot start agent {agent[0]!r}: {exc}", file=sys.stderr)
        log.event("agent-not-started", command=agent, error=str(exc))
        return 3
    assert proc.stdin is not None and proc.stdout is not None
    log.event("start", command=agent, pid=proc.pid)
    agent_in = proc.stdin
    interrupts = 0

    def close_agent_stdin() -> None:
        log.event("editor-closed-stdin")
        try:
            agent_in.close()
        except OSError:
            pass

    def on_term(signum: int, frame: Any) -> None:
        proc.terminate()

    def on_interrupt(signum: int, frame: Any) -> None:
        # The editor sends session/cancel through us on Ctrl-C: the agent gets the signal
        # too, and time to answer the turn `cancelled`. A second Ctrl-C stops it.
        nonlocal interrupts
        interrupts += 1
        if interrupts == 1:
            log.event("interrupted", forwarded_to=proc.pid)
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGINT)
        else:
            log.event("interrupted-again", terminating=proc.pid)
            proc.terminate()

    def from_client(line: bytes) -> None:
        log.message("client", line)

    def from_agent(line: bytes) -> None:
        log.message("agent", line)

    previous_term = signal.signal(signal.SIGTERM, on_term)
    previous_int = signal.signal(signal.SIGINT, on_interrupt)
    forward_in = threading.Thread(
        target=_pump,
        args=(0, agent_in.fileno(), from_client, close_agent_stdin),
        name="acp-inspect-editor-to-agent",
        daemon=True,
    )
    forward_in.start()
    try:
        _pump(proc.stdout.fileno(), out_fd, from_agent, lambda: None)
        code = proc.wait()
    finally:
        signal.signal(signal.SIGTERM, previous_term)
        signal.signal(signal.SIGINT, previous_int)
    log.event("agent-exited", status=code)
    if interrupts:
        return 130
    return 128 - code if code < 0 else code
