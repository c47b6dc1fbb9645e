"""The stdio recording proxy behind ``acp record -- AGENT...``.

It sits where an editor expects its agent: the editor's stdin goes to the agent's
stdin and the agent's stdout to the editor's stdout, byte for byte; a copy of every
complete line is handed to the cassette writer before the bytes that hold it are
passed on, so records are in wire order (a peer cannot answer a line it has not got).
Each read is one batch: the writer stamps it once, which is what keeps the proxy
close to a bare pipe (benchmarks/README.md, "Recording").

The proxy's stdout carries the agent's output and nothing else (the caller gives the
descriptor, with fd 1 already pointed at stderr); the agent's stderr is passed
through. Ctrl-C is forwarded to the agent (its own session, so it gets it once) and
the traffic keeps flowing so the editor's ``session/cancel`` and the agent's answer
are recorded; a second Ctrl-C terminates the agent. Signal handlers are installed
only when called from the main thread.

Returns the agent's exit status (128+N when killed by signal N), 3 when it cannot be
started, 130 after Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..protocol.framing import LineSplitter, Oversize
from .cassette import CassetteWriter, Sender

__all__ = ["EXIT_NOT_STARTED", "proxy_stdio"]

EXIT_NOT_STARTED = 3
READ_SIZE = 1 << 16


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _pump(
    read_fd: int,
    write_fd: int,
    writer: CassetteWriter,
    sender: Sender,
    on_end: Callable[[], None],
) -> None:
    """Copy ``read_fd`` to ``write_fd`` unchanged, recording each read's complete lines
    before passing the read on."""
    splitter = LineSplitter()
    record = writer.messages
    try:
        while True:
            try:
                data = os.read(read_fd, READ_SIZE)
            except OSError:
                break
            if not data:
                break
            lines = splitter.feed(data)
            if lines:
                if any(isinstance(line, Oversize) for line in lines):
                    for line in lines:
                        if isinstance(line, Oversize):
                            writer.oversize(sender, line.size)
                        else:
                            record(sender, (line,))
                else:
                    record(sender, lines)  # type: ignore[arg-type]  # bytes only here
            try:
                _write_all(write_fd, data)
            except OSError:
                break
    finally:
        on_end()


def proxy_stdio(
    agent: Sequence[str],
    writer: CassetteWriter,
    *,
    in_fd: int = 0,
    out_fd: int = 1,
    env: dict[str, str] | None = None,
) -> int:
    """Run ``agent`` and carry its stdio between ``in_fd``/``out_fd`` and the agent,
    recording into ``writer`` (see the module docstring). Blocks until the agent exits."""
    try:
        proc = subprocess.Popen(
            list(agent),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
            start_new_session=True,
            env=env,
        )
    except OSError as exc:
        writer.event("agent-not-started", command=list(agent), error=str(exc))
        raise
    assert proc.stdin is not None and proc.stdout is not None
    writer.event("agent-started", pid=proc.pid)
    agent_in = proc.stdin
    interrupts = 0

    def close_agent_stdin() -> None:
        writer.event("editor-closed-stdin")
        with contextlib.suppress(OSError):
            agent_in.close()

    def on_term(signum: int, frame: Any) -> None:
        proc.terminate()

    def on_interrupt(signum: int, frame: Any) -> None:
        nonlocal interrupts
        interrupts += 1
        writer.event("interrupted", count=interrupts)
        if interrupts == 1:
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGINT)
        else:
            proc.terminate()

    main = threading.current_thread() is threading.main_thread()
    previous = (
        (signal.signal(signal.SIGTERM, on_term), signal.signal(signal.SIGINT, on_interrupt))
        if main
        else None
    )
    forward_in = threading.Thread(
        target=_pump,
        args=(in_fd, agent_in.fileno(), writer, "client", close_agent_stdin),
        name="acp-record-editor-to-agent",
        daemon=True,
    )
    forward_in.start()
    try:
        _pump(proc.stdout.fileno(), out_fd, writer, "agent", lambda: None)
        code = proc.wait()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous[0])
            signal.signal(signal.SIGINT, previous[1])
        proc.stdout.close()
    writer.event("agent-exited", status=code)
    if interrupts:
        return 130
    return 128 - code if code < 0 else code
