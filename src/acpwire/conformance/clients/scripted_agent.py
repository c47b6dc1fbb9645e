"""The agent ``acp check --client`` puts in a client's place: a relay the checker drives.

The client under test starts this program where it would start an agent (the ``{agent}``
placeholder of ``acp check --client`` expands to its command line). The program connects
to the checker's control socket and hands the checker both ends of its stdio:

* every line the client writes to its stdin goes to the checker as it arrives, and so
  does the end of that input and every signal it receives;
* the checker tells it what to write on stdout or stderr (any bytes: JSON-RPC messages,
  garbage, a 40 MB line, a stderr flood), when to exit and with which status, and when to
  start a grandchild that keeps its stdout open after it is gone.

It exits by itself when its stdin ends, after writing what was queued, as an agent should.

So the scenarios themselves (:mod:`.scene` and the scripts) run in the checker, and this
program stays small, starts fast and needs nothing but the standard library: it is run
as a plain script (``python -I .../scripted_agent.py``), without importing acpwire, so it
works whatever environment the client gives its agent.

**The control protocol** is one JSON object per line over a Unix socket. From here to
the checker: ``hello`` (scenario, role, pid), ``line`` (base64 of one stdin line,
``end`` false when the input ended without a newline, ``begun`` the last output op
started when it was read), ``eof``, ``signal`` (its name),
``written`` (an output op is done: its ``seq`` and byte count), ``broken-pipe`` (the
client closed the other end) and ``grandchild`` (its pid). From the checker: ``write``
(``fd`` 1 or 2, ``parts``: ``{"b64": ...}`` or ``{"repeat": b64, "count": n}``; ops run
in order, on their own thread, so a client that stops reading blocks only the output),
``spawn`` (a grandchild that holds stdout and stderr open until the checker lets it go)
and ``exit`` (``status``; after the writes before it). When the checker goes away, the
program exits at once, so a crashed checker leaves no agent behind.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any, BinaryIO, cast

__all__ = ["GRANDCHILD_CODE", "main"]

_CHUNK = 1 << 20
"""Bytes written per system call when an output op repeats a pattern."""
_MAX_LINE = 64 << 20
"""Longest stdin line passed on whole; a longer one arrives in pieces (the client's own
messages are small: this only bounds memory against a client gone wild)."""

GRANDCHILD_CODE = (
    "import json, socket, sys\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    "s.connect(sys.argv[1])\n"
    "s.sendall(json.dumps({'event': 'hello', 'role': 'grandchild', 'scenario': sys.argv[2]})"
    ".encode() + b'\\n')\n"
    "s.settimeout(float(sys.argv[3]))\n"
    "try:\n"
    "    s.recv(1)\n"
    "except OSError:\n"
    "    pass\n"
)
"""The grandchild: holds the inherited stdout and stderr until the checker closes its
connection (or ``sys.argv[3]`` seconds pass), so it can never outlive a check for long."""


class _Relay:
    def __init__(self, control: socket.socket, scenario: str, control_path: str) -> None:
        self.control = control
        self.scenario = scenario
        self.control_path = control_path
        self.lock = threading.Lock()
        self.ops: queue.Queue[dict[str, Any]] = queue.Queue()
        self.begun = 0
        """The last output op whose writing has begun: sent with every line read, it tells
        the checker which of its messages the client cannot have seen yet."""

    def event(self, **fields: Any) -> None:
        data = json.dumps(fields, separators=(",", ":")).encode() + b"\n"
        with self.lock:
            try:
                self.control.sendall(data)
            except OSError:
                os._exit(70)  # the checker is gone: nothing left to do here

    def pump_stdin(self, stdin: BinaryIO) -> None:
        while True:
            try:
                line = stdin.readline(_MAX_LINE)
            except OSError:
                line = b""
            if not line:
                self.event(event="eof")
                # Like a well-behaved agent (SHUT-001): exit at the end of input, once what
                # the checker queued is written.
                self.ops.put({"op": "exit", "status": 0})
                return
            self.event(
                event="line",
                data=base64.b64encode(line).decode(),
                end=line.endswith(b"\n"),
                begun=self.begun,
            )

    def write_all(self, fd: int, data: bytes) -> bool:
        view = memoryview(data)
        while view:
            try:
                written = os.write(fd, view)
            except BrokenPipeError:
                self.event(event="broken-pipe", fd=fd)
                return False
            view = view[written:]
        return True

    def run_ops(self) -> None:
        while True:
            op = self.ops.get()
            kind = op.get("op")
            if kind == "write":
                self.begun = int(op.get("seq") or 0)
                fd = 2 if op.get("fd") == 2 else 1
                total = 0
                ok = True
                for part in op.get("parts", []):
                    if not ok:
                        break
                    if "b64" in part:
                        data = base64.b64decode(part["b64"])
                        ok = self.write_all(fd, data)
                        total += len(data)
                    else:
                        pattern = base64.b64decode(part["repeat"])
                        left = int(part["count"]) * len(pattern)
                        block = pattern * max(1, _CHUNK // max(1, len(pattern)))
                        while ok and left > 0:
                            piece = block[:left]
                            ok = self.write_all(fd, piece)
                            left -= len(piece)
                            total += len(piece)
                self.event(event="written", seq=op.get("seq"), bytes=total, ok=ok)
            elif kind == "spawn":
                child = subprocess.Popen(
                    [
                        sys.executable,
                        "-I",
                        "-c",
                        GRANDCHILD_CODE,
                        self.control_path,
                        self.scenario,
                        str(op.get("seconds", 30)),
                    ],
                    stdin=subprocess.DEVNULL,
                )
                self.event(event="grandchild", pid=child.pid)
            elif kind == "exit":
                os._exit(int(op.get("status", 0)))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripted_agent", description="the agent acp check --client plays (see its docs)"
    )
    parser.add_argument("--control", required=True, help="the checker's Unix socket")
    parser.add_argument("--scenario", required=True, help="the scenario this run belongs to")
    args = parser.parse_args(argv)
    control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        control.connect(args.control)
    except OSError as exc:
        print(f"scripted agent: cannot reach acp check at {args.control}: {exc}", file=sys.stderr)
        return 70
    relay = _Relay(control, args.scenario, args.control)

    def on_signal(number: int, _frame: object) -> None:
        relay.event(event="signal", signal=signal.Signals(number).name)
        if number != signal.SIGINT:  # an interrupt is reported; the agent lives on
            os._exit(128 + number)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    relay.event(
        event="hello", role="agent", scenario=args.scenario, pid=os.getpid(), cwd=os.getcwd()
    )
    threading.Thread(target=relay.pump_stdin, args=(sys.stdin.buffer,), daemon=True).start()
    threading.Thread(target=relay.run_ops, daemon=True).start()
    reader = control.makefile("rb")
    for raw in reader:
        try:
            op = json.loads(raw)
        except ValueError:
            continue
        if isinstance(op, dict):
            relay.ops.put(cast("dict[str, Any]", op))
    os._exit(70)  # the checker closed the control connection


if __name__ == "__main__":
    sys.exit(main())
