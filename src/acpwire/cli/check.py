"""``acp check``: run the black-box conformance checks against an agent, a client or an endpoint.

``acp check [--json] [--junit FILE] [--only ID,...] [--prompt TEXT] [--slow-prompt TEXT]
[--tool-prompt TEXT]... [--protocol 2] -- AGENT ARGS...`` checks a stdio agent (with
``--protocol 2`` over the ACP v2 draft: :mod:`acpwire.conformance.v2`); ``acp check --client
'COMMAND {agent}' [--client-prompt TEXT]`` checks a client, playing a scripted agent in
its place; ``acp check --url URL [--header K:V]... [--token T] [--token2 T] [--origin O]
[--via websocket|http]`` checks a remote endpoint (the Streamable HTTP and WebSocket RFD,
docs/security.md) and the agent behind it. Each prints a table (or, with ``--json``, one
JSON document) of check results, each citing requirement ids of
:mod:`acpwire.conformance.requirements`; ``--junit FILE`` also writes JUnit XML for CI. Exit
status: 0 when no check failed at MUST level, 1 when one did, 3 when the target could not
be checked past authentication (a client: past its start or its prompt), 2 for usage
errors. The checks themselves live in :mod:`acpwire.conformance`; this module
only parses options and renders.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from acpwire.conformance import Report

__all__ = ["add_check_parser", "render_report", "run_check"]

_STATUS_STYLE = {"pass": "green", "fail": "red", "skip": "yellow", "n/a": "dim"}


def add_check_parser(sub: Any) -> argparse.ArgumentParser:
    """Register ``check`` on the ``acp`` subparsers (argparse only; nothing heavy imported)."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "check",
        help="check an agent (over stdio) or a remote endpoint (--url) against ACP's rules",
        description=(
            "Start the agent, drive it as an editor would and report which ACP rules it "
            "follows. Put the agent command after `--`. With --url, check a remote ACP "
            "endpoint (Streamable HTTP and WebSocket RFD, security) and the agent behind it."
        ),
        epilog=(
            "exit status: 0 no check failed at MUST level, 1 one did, "
            "3 blocked by authentication, 2 usage"
        ),
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--junit", default=None, metavar="FILE", help="also write the report as JUnit XML"
    )
    parser.add_argument(
        "--only",
        default=None,
        metavar="ID,...",
        help="run only these checks (check names or requirement ids, comma separated)",
    )
    parser.add_argument(
        "--prompt", default="Hello", help="a prompt the agent answers quickly (default: Hello)"
    )
    parser.add_argument(
        "--slow-prompt",
        default=None,
        metavar="TEXT",
        help="a prompt that keeps the agent busy until cancelled (enables the cancel checks)",
    )
    parser.add_argument(
        "--tool-prompt",
        action="append",
        default=[],
        metavar="TEXT",
        help="a prompt that makes the agent use tools, run with every client capability and "
        "permissions granted (repeatable)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds to wait for an answer that takes work, a whole turn included (default: 30)",
    )
    parser.add_argument(
        "--quick-timeout",
        type=float,
        default=5.0,
        help="seconds to wait for an answer that takes no work, e.g. to an unknown method "
        "(default: 5)",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=5.0,
        help="seconds allowed to end a cancelled turn or to exit after stdin closes (default: 5)",
    )
    parser.add_argument("--cwd", default=None, help="session folder (default: a fresh temp dir)")
    parser.add_argument(
        "--protocol",
        type=int,
        choices=(1, 2),
        default=1,
        help="2: check the agent over the ACP v2 draft instead (negotiation, a prompt turn, "
        "cancel with --slow-prompt, every message against the v2 schema; default: 1)",
    )
    parser.add_argument(
        "--auth-method",
        default=None,
        metavar="ID",
        help="authenticate with this method when session/new needs authentication",
    )
    clients = parser.add_argument_group("clients (--client)")
    clients.add_argument(
        "--client",
        default=None,
        metavar="COMMAND",
        help="check this client command instead of an agent: the checker plays a scripted, "
        "hostile agent; {agent} in COMMAND becomes that agent's command (words), "
        "{agent_line} the same as one word, {prompt} the --client-prompt, {cwd} the "
        "session folder; the client must send one prompt by itself",
    )
    clients.add_argument(
        "--client-prompt",
        default="Hello from acp check",
        metavar="TEXT",
        help="what {prompt} becomes (default: Hello from acp check)",
    )
    remote = parser.add_argument_group("endpoints (--url)")
    remote.add_argument(
        "--url", default=None, help="check the ACP endpoint at this http(s) URL (e.g. .../acp)"
    )
    remote.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="NAME:VALUE",
        help="send this header on every request (repeatable); Authorization and Cookie count "
        "as credentials",
    )
    remote.add_argument(
        "--token",
        default=os.environ.get("ACP_TOKEN") or None,
        help="bearer token for the endpoint (default: $ACP_TOKEN)",
    )
    remote.add_argument(
        "--token2",
        default=None,
        metavar="TOKEN",
        help="a second principal's token: enables the isolation checks",
    )
    remote.add_argument(
        "--origin", default=None, help="an Origin the endpoint allows, sent on every request"
    )
    remote.add_argument(
        "--via",
        choices=("websocket", "http"),
        default="websocket",
        help="the transport the agent checks use through the endpoint (default: websocket)",
    )
    remote.add_argument("--cafile", default=None, help="trust these certificates (https URLs)")
    remote.add_argument(
        "--keepalive-wait",
        type=float,
        default=20.0,
        metavar="S",
        help="longest silence allowed on an idle SSE stream (default: 20; 0 skips the check)",
    )
    parser.add_argument("--list", action="store_true", help="list the checks and exit")
    parser.add_argument("agent", nargs=argparse.REMAINDER, help="-- AGENT_COMMAND ARGS...")
    parser.set_defaults(handler=run_check)
    return parser


def _list_checks(out: TextIO) -> int:
    from acpwire.conformance import CHECKS
    from acpwire.conformance.requirements import BY_ID

    for check in CHECKS:
        out.write(f"{check.key:<24} {check.target:<9} {check.level:<6} {', '.join(check.ids)}\n")
        for rid in check.ids:
            out.write(f"    {rid}: {BY_ID[rid].text}\n")
        if check.needs:
            out.write(f"    needs: {', '.join(check.needs)}\n")
    return 0


def _usage(message: str) -> int:
    print(f"acp check: {message}", file=sys.stderr)
    return 2


def _headers(values: list[str]) -> dict[str, str]:
    """``--header NAME:VALUE`` values; ``ValueError`` for one without a name."""
    headers: dict[str, str] = {}
    for value in values:
        name, sep, rest = value.partition(":")
        name = name.strip()
        if not sep or not name or any(c.isspace() for c in name):
            raise ValueError(f"--header {value!r} is not NAME:VALUE")
        headers[name] = rest.strip()
    return headers


def _endpoint(args: argparse.Namespace) -> Any:
    """The ``--url`` target; ``ValueError`` for bad options."""
    from acpwire.conformance import EndpointTarget

    if args.cafile is not None and not os.path.isfile(args.cafile):
        raise ValueError(f"--cafile {args.cafile!r} is not a file")
    if args.keepalive_wait < 0:
        raise ValueError("--keepalive-wait must not be negative")
    return EndpointTarget(
        args.url,
        token=args.token,
        token2=args.token2,
        headers=_headers(args.header),
        origin=args.origin,
        cafile=args.cafile,
        via=args.via,
        keepalive_wait=args.keepalive_wait,
    )


def run_check(args: argparse.Namespace) -> int:
    """The ``acp check`` command; returns the exit status."""
    from acpwire.conformance import CheckOptions, run_checks, select_checks

    if args.list:
        return _list_checks(sys.stdout)
    agent = list(args.agent)
    if agent and agent[0] == "--":
        agent = agent[1:]
    if args.protocol == 2 and (args.client is not None or args.url is not None):
        return _usage("--protocol 2 checks an agent command (not --client or --url)")
    if args.client is not None:
        if agent or args.url is not None:
            return _usage("give one of --client, --url or an agent command, not both")
        return _run_client_check(args)
    endpoint = None
    if args.url is not None:
        if agent:
            return _usage("give either --url or an agent command, not both")
        try:
            endpoint = _endpoint(args)
        except ValueError as exc:
            return _usage(str(exc))
    elif not agent:
        return _usage("give the agent command after --, or --url URL")
    try:
        only = select_checks(args.only.split(",")) if args.only else None
    except ValueError as exc:
        return _usage(f"{exc} (see acp check --list)")
    if args.cwd is not None and not os.path.isdir(args.cwd):
        return _usage(f"--cwd {args.cwd!r} is not a directory")
    problem = _option_problem(args)
    if problem is not None:
        return _usage(problem)
    options = CheckOptions(
        command=agent,
        endpoint=endpoint,
        prompt=args.prompt,
        slow_prompt=args.slow_prompt,
        tool_prompts=tuple(args.tool_prompt),
        only=only,
        timeout=args.timeout,
        quick_timeout=args.quick_timeout,
        grace=args.grace,
        cwd=os.path.abspath(args.cwd) if args.cwd else None,
        auth_method=args.auth_method,
    )
    # The engine logs what it drops (answers to the checker's junk line, say); the report
    # already says what matters, so keep the terminal clean.
    logging.getLogger("acpwire").addHandler(logging.NullHandler())
    if args.protocol == 2:
        from acpwire.conformance import run_v2_checks

        return _emit(asyncio.run(run_v2_checks(options)), args)
    return _emit(asyncio.run(run_checks(options)), args)


def _emit(report: Report, args: argparse.Namespace) -> int:
    """Write the report as asked (JUnit file, JSON or table); the exit status."""
    if args.junit:
        try:
            with open(args.junit, "w", encoding="utf-8") as handle:
                handle.write(report.to_junit_xml())
        except OSError as exc:
            print(f"acp check: cannot write {args.junit}: {exc.strerror}", file=sys.stderr)
            return 2
    if args.json:
        json.dump(report.to_json(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        _print_report(report, sys.stdout)
    return report.exit_code


def _print_report(report: Any, out: TextIO) -> None:
    """A Rich table on a terminal; plain lines otherwise (a pipe, a file, a CI log).

    Off a terminal Rich would lay the table out for 80 columns: padded rows and long
    details folded mid-word, which breaks ``grep`` and reads badly in logs.
    """
    try:
        from rich.console import Console
    except ImportError:
        _render_plain(report, out)
        return
    if not out.isatty():
        _render_plain(report, out)
        return
    Console(file=out).print(render_report(report))


def _option_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the options every kind of check shares, if anything."""
    if args.junit and not os.path.isdir(os.path.dirname(os.path.abspath(args.junit))):
        return f"cannot write {args.junit}: no such folder"
    if min(args.timeout, args.quick_timeout, args.grace) <= 0:
        return "--timeout, --quick-timeout and --grace must be positive"
    return None


def _run_client_check(args: argparse.Namespace) -> int:
    """``acp check --client COMMAND``: the client checks of docs/check.md."""
    from acpwire.conformance import (
        ClientCheckOptions,
        checks_for,
        run_client_checks,
        select_checks,
    )
    from acpwire.conformance.clients.driver import client_argv

    try:
        only = select_checks(args.only.split(",")) if args.only else None
        client_argv(args.client, ["agent"], args.client_prompt, "/")
    except ValueError as exc:
        return _usage(f"{exc} (see acp check --help)")
    if only is not None and not only & {c.key for c in checks_for("client")}:
        return _usage(f"--only {args.only} names no client check")
    problem = _option_problem(args)
    if problem is not None:
        return _usage(problem)
    options = ClientCheckOptions(
        command=args.client,
        prompt=args.client_prompt,
        only=only,
        timeout=args.timeout,
        quick_timeout=args.quick_timeout,
        grace=args.grace,
    )
    logging.getLogger("acpwire").addHandler(logging.NullHandler())
    return _emit(asyncio.run(run_client_checks(options)), args)


def render_report(report: Any) -> Any:
    """A Rich renderable of a :class:`~acpwire.conformance.Report`."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(title=_title(report), title_justify="left", expand=False, show_lines=False)
    table.add_column("result", no_wrap=True)
    table.add_column("level", no_wrap=True)
    table.add_column("check", no_wrap=True)
    table.add_column("requirements")
    table.add_column("detail", overflow="fold")
    for r in report.results:
        table.add_row(
            Text(r.status, style=_STATUS_STYLE[r.status]),
            r.level,
            r.check.key,
            ", ".join(r.broken or r.check.ids),
            Text(r.detail),  # plain text: details quote agent output, never markup
        )
    summary = Text(_summary(report), style="red" if report.failed_must else "green")
    parts: list[Any] = [table, summary]
    if report.blocked:
        parts.append(Text(report.blocked, style="yellow"))
    parts += [Text(f"note: {n}", style="dim") for n in report.notes]
    return Group(*parts)


def _title(report: Any) -> str:
    info: dict[str, Any] = report.agent_info or {}
    name = " ".join(str(info.get(k)) for k in ("name", "version") if info.get(k)) or "unknown"
    if report.command and "://" in report.command[0]:
        return f"acp check: {report.command[0]}, agent {name}"
    kind = "client " if report.target == "client" else ""
    return f"acp check: {kind}{name} (protocol {report.protocol_version})"


def _summary(report: Any) -> str:
    counts = report.counts()
    return (
        f"{counts['pass']} passed, {counts['fail']} failed "
        f"({len(report.failed_must)} MUST), {counts['skip']} skipped, "
        f"{counts['n/a']} not applicable in {report.duration:.1f} s"
    )


def _render_plain(report: Any, out: TextIO) -> None:
    """One line per check, each field whole: no padding to a width, no line breaks added."""
    out.write(_title(report) + "\n")
    for r in report.results:
        fields = [
            f"{r.status:<4}",
            f"{r.level:<6}",
            r.check.key,
            ", ".join(r.broken or r.check.ids),
        ]
        if r.detail:
            fields.append(" ".join(r.detail.split()))  # one line, whatever the agent sent
        out.write("  ".join(fields) + "\n")
    out.write(_summary(report) + "\n")
    if report.blocked:
        out.write(report.blocked + "\n")
    for note in report.notes:
        out.write(f"note: {note}\n")
