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
    _add_redaction_options(record)
    record.add_argument("agent", nargs=argparse.REMAINDER, help="-- AGENT_COMMAND ARGS...")
    record.set_defaults(handler=run_record)


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
    if not agent:
        return _error("record", "give the agent command after --")
    try:
        redaction = _redaction(args)
        for pattern in redaction.patterns:
            re.compile(pattern)
    except re.error as exc:
        return _error("record", f"--redact-pattern: {exc}")
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
