"""``acp record``, ``acp replay``, ``acp verify`` and ``acp view``: the flight recorder's
commands, thin over :mod:`acpwire.recorder` (docs/recorder.md).

``acp record -o FILE [redaction options] -- AGENT...`` runs as an editor's agent command
and records the conversation; ``--url URL`` makes it a local proxy to a remote agent.

Only argparse is imported when the parser is built; each command imports its work.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

__all__ = ["add_recorder_parsers"]


def _agent_command(args: argparse.Namespace) -> list[str]:
    agent = list(args.agent)
    if agent and agent[0] == "--":
        agent = agent[1:]
    return agent


def _add_redaction_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("redaction (on by default)")
    group.add_argument(
        "--no-redact",
        action="store_true",
        help="record secrets as they are (the cassette then holds tokens and keys)",
    )
    group.add_argument(
        "--redact-files",
        action="store_true",
        help="replace file text read and written through the client by its size and hash",
    )
    group.add_argument(
        "--redact-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help="also replace text matching this regular expression (repeatable)",
    )
    group.add_argument(
        "--redact-value",
        action="append",
        default=[],
        metavar="TEXT",
        help="also replace this exact text wherever it appears (repeatable)",
    )


def add_recorder_parsers(sub: Any) -> None:
    """Register ``record`` (and the other recorder commands) on the ``acp`` subparsers."""
    record = sub.add_parser(
        "record",
        help="record the ACP conversation with an agent into a cassette file",
        description=(
            "Run as the editor's agent command: carries stdin/stdout to the agent unchanged "
            "and records every message (secrets redacted) into FILE. Put the agent command "
            "after `--`."
        ),
        epilog="exit status: the agent's; 3 agent not started; 2 usage; 130 interrupted",
    )
    record.add_argument("-o", "--output", required=True, metavar="FILE", help="the cassette")
    record.add_argument(
        "--url",
        default=None,
        help="record a remote agent: serve a local proxy to this endpoint (HTTP/1.1, h2c, "
        "WebSocket) and give its address to the client instead",
    )
    record.add_argument(
        "--listen",
        default="127.0.0.1:0",
        metavar="HOST:PORT",
        help="with --url: where the proxy listens (default 127.0.0.1 and a free port)",
    )
    _add_redaction_options(record)
    record.add_argument("agent", nargs=argparse.REMAINDER, help="-- AGENT_COMMAND ARGS...")
    record.set_defaults(handler=run_record)

    replay = sub.add_parser(
        "replay",
        help="replay a cassette: serve its agent side, or drive an agent with its client side",
        description=(
            "--as-agent: serve the recorded agent on stdio to a real client (an editor, "
            "`acp chat -- acp replay FILE --as-agent`). --as-client: drive the agent "
            "command given after `--` with the recorded client side."
        ),
        epilog="exit status: 0 all matched; 1 something differed; 2 usage; 3 agent not started",
    )
    replay.add_argument("cassette", metavar="FILE")
    replay.usage = "acp replay FILE (--as-agent | --as-client) [options] [-- AGENT ARGS...]"
    role = replay.add_mutually_exclusive_group(required=True)
    role.add_argument("--as-agent", action="store_true", help="play the agent side")
    role.add_argument("--as-client", action="store_true", help="play the client side")
    replay.add_argument(
        "--realtime",
        action="store_true",
        help="with --as-agent: keep the recorded spacing of messages (default: at once)",
    )
    _add_client_options(replay)
    replay.add_argument(
        "-o", "--output", default=None, metavar="NEW", help="with --as-client: record the new run"
    )
    # Everything after `--` is cut off by main() before parsing (see there).
    replay.set_defaults(agent=[])
    replay.set_defaults(handler=run_replay)

    verify = sub.add_parser(
        "verify",
        help="replay a cassette's client side to an agent and show what it says differently",
        description=(
            "Drive the agent command given after `--` with the recorded client side and "
            "compare what it says with the recording: added, missing and changed messages, "
            "with the JSON paths that differ."
        ),
        epilog="exit status: 0 no differences; 1 differences; 2 usage; 3 agent not started",
    )
    verify.add_argument("cassette", metavar="FILE")
    verify.usage = "acp verify FILE [options] -- AGENT ARGS..."
    _add_client_options(verify)
    verify.set_defaults(agent=[])
    verify.set_defaults(handler=run_verify)

    view = sub.add_parser(
        "view",
        help="write a cassette as one self-contained HTML page (a sequence view)",
        description=(
            "Write the conversation of a cassette as one HTML page that needs no network: "
            "requests paired with their answers and latency, turns, tool calls with diffs "
            "and terminal output, permission requests and the choice; filters and search."
        ),
        epilog="exit status: 0 written; 1 not a cassette or not writable; 2 usage",
    )
    view.add_argument("cassette", metavar="FILE")
    view.add_argument(
        "-o", "--output", default=None, metavar="HTML", help="the page (default: FILE.html)"
    )
    view.add_argument(
        "--follow",
        action="store_true",
        help="serve the page on 127.0.0.1 and keep it up to date while FILE is written "
        "(until Ctrl-C)",
    )
    view.add_argument(
        "--port", type=int, default=0, help="with --follow: the port (default: a free one)"
    )
    view.set_defaults(handler=run_view)


def _add_client_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cwd",
        default=None,
        help="the workspace to use instead of the recorded one (default: the recorded one "
        "if it exists, else the current folder)",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long a quiet agent is waited for when it says less than recorded (0.5)",
    )


def _redaction(args: argparse.Namespace) -> Any:
    from acpwire.recorder.redaction import RedactionSettings

    return RedactionSettings(
        enabled=not args.no_redact,
        patterns=list(args.redact_pattern),
        secrets=list(args.redact_value),
        files=args.redact_files,
    )


def _error(command: str, text: str) -> int:
    print(f"acp {command}: {text}", file=sys.stderr)
    return 2


def run_record(args: argparse.Namespace) -> int:
    """The ``acp record`` command; returns the exit status."""
    import re

    from acpwire.recorder.cassette import CassetteWriter
    from acpwire.recorder.stdio_proxy import EXIT_NOT_STARTED, proxy_stdio

    agent = _agent_command(args)
    if args.url is not None and agent:
        return _error("record", "give either --url or an agent command, not both")
    if args.url is None and not agent:
        return _error("record", "give the agent command after -- (or --url URL)")
    try:
        redaction = _redaction(args)
        for pattern in redaction.patterns:
            re.compile(pattern)
    except re.error as exc:
        return _error("record", f"--redact-pattern: {exc}")
    if args.url is not None:
        return _record_remote(args, redaction)
    # Keep the real stdout for the agent's bytes only; a stray print lands on stderr.
    sys.stdout.flush()
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        writer = CassetteWriter(args.output, mode="stdio", command=agent, redaction=redaction)
    except OSError as exc:
        os.close(out_fd)
        return _error("record", f"cannot write {args.output!r}: {exc.strerror or exc}")
    try:
        return proxy_stdio(agent, writer, out_fd=out_fd)
    except OSError as exc:
        print(f"acp record: cannot start agent {agent[0]!r}: {exc}", file=sys.stderr)
        return EXIT_NOT_STARTED
    finally:
        writer.close()
        os.close(out_fd)


def _load(command: str, path: str) -> Any:
    from acpwire.recorder.cassette import CassetteError, read_cassette
    from acpwire.recorder.conversation import Conversation

    try:
        return Conversation.from_cassette(read_cassette(path))
    except (OSError, CassetteError) as exc:
        text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        print(f"acp {command}: cannot read {path!r}: {text}", file=sys.stderr)
        return None


def _stderr_log(text: str) -> None:
    from .sanitize import sanitize

    print(sanitize(text), file=sys.stderr)


def run_replay(args: argparse.Namespace) -> int:
    """The ``acp replay`` command; returns the exit status."""
    agent = _agent_command(args)
    if args.as_agent and agent:
        return _error("replay", "--as-agent serves the recording itself: no agent command")
    if args.as_client and not agent:
        return _error("replay", "--as-client: give the agent command after --")
    if args.as_agent and (args.output or args.cwd or args.settle is not None):
        return _error("replay", "-o, --cwd and --settle go with --as-client")
    conversation = _load("replay", args.cassette)
    if conversation is None:
        return 2
    if args.as_agent:
        return _replay_as_agent(conversation, args.realtime)
    run = _drive(args, conversation, agent)
    if isinstance(run, int):
        return run
    said = len(run.messages)
    _stderr_log(f"acp replay: the agent sent {said} message(s)")
    return 0 if run.report.ok else 1


def _replay_as_agent(conversation: Any, realtime: bool) -> int:
    import asyncio

    from acpwire.recorder.replay_agent import ReplayAgent
    from acpwire.transports.stdio import stdio_transport

    agent = ReplayAgent(conversation, realtime=realtime, log=_stderr_log)

    async def serve() -> Any:
        return await agent.serve(await stdio_transport())

    try:
        report = asyncio.run(serve())
    except KeyboardInterrupt:
        return 130
    return 0 if report.ok else 1


def _drive(args: argparse.Namespace, conversation: Any, agent: list[str]) -> Any:
    """Run the recorded client side against ``agent``: the live run, or an exit status."""
    import asyncio

    from acpwire.recorder.recording import record_to
    from acpwire.recorder.replay_client import SETTLE, ReplayClient
    from acpwire.transports import AgentNotFoundError, spawn

    cwd = args.cwd
    if cwd is None and conversation.cwd is not None and not os.path.isdir(conversation.cwd):
        cwd = os.getcwd()
    if cwd is not None:
        if not os.path.isdir(cwd):
            return _error(args.command, f"--cwd {cwd!r} is not a folder")
        cwd = os.path.abspath(cwd)
    settle = SETTLE if args.settle is None else args.settle

    async def drive() -> Any:
        transport: Any = await spawn(agent[0], agent[1:], on_stderr=_stderr_log)
        if getattr(args, "output", None):
            transport = record_to(transport, args.output, command=agent)
        player = ReplayClient(conversation, cwd=cwd, settle=settle, log=_stderr_log)
        return await player.run(transport)

    try:
        return asyncio.run(drive())
    except (AgentNotFoundError, OSError) as exc:
        print(f"acp {args.command}: cannot start agent {agent[0]!r}: {exc}", file=sys.stderr)
        return 3
    except KeyboardInterrupt:
        return 130


def run_verify(args: argparse.Namespace) -> int:
    """The ``acp verify`` command; returns the exit status."""
    from acpwire.recorder.verify import compare, format_differences

    agent = _agent_command(args)
    if not agent:
        return _error("verify", "give the agent command after --")
    conversation = _load("verify", args.cassette)
    if conversation is None:
        return 2
    run = _drive(args, conversation, agent)
    if isinstance(run, int):
        return run
    found = compare(conversation, run)
    from .sanitize import sanitize

    print(sanitize(format_differences(found)))
    for note in run.report.unmatched:
        print(sanitize(f"also: {note}"))
    return 1 if found or run.report.unmatched else 0


def _record_remote(args: argparse.Namespace, redaction: Any) -> int:
    import asyncio
    import importlib.util
    import signal

    from acpwire.recorder.cassette import CassetteWriter

    from .connect import url_problem

    problem = url_problem(args.url)
    if problem is not None:
        return _error("record", f"--url: {problem}")
    host, _, port = args.listen.rpartition(":")
    if not host or not port.isdigit():
        return _error("record", f"--listen {args.listen!r}: give HOST:PORT")
    missing = [
        m for m in ("hypercorn", "httpx", "websockets") if importlib.util.find_spec(m) is None
    ]
    if missing:
        return _error("record", "--url needs the remote extra: pip install 'acpwire[remote]'")
    from acpwire.recorder.remote_proxy import serve_recording_proxy

    try:
        writer = CassetteWriter(args.output, mode="remote", url=args.url, redaction=redaction)
    except OSError as exc:
        return _error("record", f"cannot write {args.output!r}: {exc.strerror or exc}")

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        async with serve_recording_proxy(args.url, writer, host.strip("[]"), int(port)) as served:
            print(
                f"acp record: recording {args.url} through {served.url} "
                f"(WebSocket: {served.ws_url})",
                file=sys.stderr,
                flush=True,
            )
            await stop.wait()

    try:
        asyncio.run(serve())
    except OSError as exc:
        print(f"acp record: cannot listen on {args.listen}: {exc.strerror or exc}", file=sys.stderr)
        return 3
    finally:
        writer.close()
    return 0


def run_view(args: argparse.Namespace) -> int:
    """The ``acp view`` command; returns the exit status."""
    from pathlib import Path

    from acpwire.recorder.cassette import CassetteError, read_cassette
    from acpwire.recorder.viewer import render_html

    from .sanitize import sanitize

    source = Path(args.cassette)
    if args.follow:
        return _follow_view(source, args.port)
    target = Path(args.output) if args.output else source.with_name(source.name + ".html")
    try:
        page = render_html(read_cassette(source))
        target.write_text(page, encoding="utf-8")
    except CassetteError as exc:
        print(sanitize(f"acp view: {exc}"), file=sys.stderr)
        return 1
    except OSError as exc:
        print(sanitize(f"acp view: {exc.filename}: {exc.strerror or exc}"), file=sys.stderr)
        return 1
    print(sanitize(f"acp view: wrote {target}"), file=sys.stderr)
    return 0


def _follow_view(source: Any, port: int) -> int:
    import signal
    import threading

    from acpwire.recorder.cassette import CassetteError
    from acpwire.recorder.view_server import ViewServer

    from .sanitize import sanitize

    try:
        server = ViewServer(source, port=port)
    except CassetteError as exc:
        print(sanitize(f"acp view: {exc}"), file=sys.stderr)
        return 1
    except OSError as exc:
        print(
            sanitize(f"acp view: {exc.filename or source}: {exc.strerror or exc}"), file=sys.stderr
        )
        return 1
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    print(sanitize(f"acp view: following {source} at {server.url}"), file=sys.stderr, flush=True)
    try:
        stop.wait()
    finally:
        server.close()
    return 0
