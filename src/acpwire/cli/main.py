"""The ``acp`` command.

``acp chat [--cwd DIR] [--prompt TEXT] [--policy allow|deny|ask] [--json] [--protocol 1|2] [-- AGENT ARGS...]``
talks to an agent (the built-in demo agent when no command is given; a remote one with
``--url URL [--token T] [--http]``): one turn with ``--prompt``, else the interactive
Textual app. ``acp connect URL`` bridges stdio to a remote agent (WebSocket, or
Streamable HTTP with ``--http``). ``acp demo-agent [--store URL]`` runs
the demo agent over stdio (its options are the demo's own). ``acp --version``.

Rich and Textual (the ``cli`` extra) are imported only when a subcommand needs them,
with an install hint when they are missing; nothing in the library imports this package.

When the reader of stdout goes away (``acp check --list | head``), the command stops
quietly with status 141, as a Unix tool killed by SIGPIPE would: no traceback. SIGPIPE
itself stays ignored (Python's default), so a dead agent's pipe is an error to handle,
not a signal that kills the client.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Sequence
from importlib import metadata

__all__ = ["build_parser", "main"]

INSTALL_HINT = "acp chat needs the cli extra: pip install 'acpwire[cli]'"
PROTOCOL_ENV = "ACP_PROTOCOL"
"""``acp chat``'s environment switch for ``--protocol`` (2 offers the v2 draft)."""


def _version() -> str:
    try:
        return metadata.version("acpwire")
    except metadata.PackageNotFoundError:  # pragma: no cover - bare checkout
        return "0"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="acp", description="The Agent Client Protocol toolkit (acpwire)."
    )
    parser.add_argument("--version", action="version", version=f"acp (acpwire) {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    chat = sub.add_parser(
        "chat",
        help="talk to an agent (interactive, or one turn with --prompt)",
        description=(
            "Talk to an ACP agent over stdio. Without an agent command the built-in demo "
            "agent runs. Put the agent command after `--`."
        ),
        epilog=(
            "exit status (with --prompt): 0 end_turn, 1 agent error, 2 usage, "
            "3 agent not started, 4 protocol version mismatch, 5 authentication required, "
            "10 cancelled, 11 refusal, 12 max_tokens, 13 max_turn_requests, 130 interrupted"
        ),
    )
    chat.add_argument("--cwd", default=None, help="the session's working directory (default: .)")
    chat.add_argument("--prompt", default=None, help="send this prompt, print the turn, exit")
    chat.add_argument(
        "--policy",
        choices=("allow", "deny", "ask"),
        default=None,
        help="answer permission requests: allow, deny or ask "
        "(default: deny with --prompt, ask interactively)",
    )
    chat.add_argument(
        "--json",
        action="store_true",
        help="with --prompt: print each session/update as a JSON line, then the stop reason",
    )
    chat.add_argument(
        "--protocol",
        type=int,
        choices=(1, 2),
        default=None,
        help="highest ACP version to offer: 1, or 2 for the v2 draft, falling back to 1 "
        "when the agent answers 1 (default: $ACP_PROTOCOL or 1)",
    )
    chat.add_argument(
        "--url",
        default=None,
        help="talk to a remote agent (the address `acp serve` prints) instead of a command",
    )
    chat.add_argument(
        "--token",
        default=None,
        help="with --url: send 'Authorization: Bearer TOKEN' (default: $ACP_TOKEN)",
    )
    chat.add_argument(
        "--http", action="store_true", help="with --url: Streamable HTTP instead of WebSocket"
    )
    chat.add_argument("agent", nargs=argparse.REMAINDER, help="-- AGENT_COMMAND ARGS...")
    # Listed for --help only: main() hands everything after `demo-agent` to the demo's
    # own parser (argparse cannot pass `--store URL` through a REMAINDER positional).
    sub.add_parser(
        "demo-agent",
        help="run the built-in demo agent on stdio ([--store URL], see --help)",
        add_help=False,
    )
    serve = sub.add_parser(
        "serve",
        help="serve a stdio agent (or --demo) remotely over WebSocket and Streamable HTTP",
        description="Expose an ACP agent on http://HOST:PORT/acp. Put the agent command after `--`.",
    )
    from . import serve as serve_command  # stdlib-only module; the server is imported on use

    serve_command.add_arguments(serve)
    from .check import add_check_parser  # argparse-only modules; the work is imported on use
    from .connect import add_connect_parser
    from .inspect import add_inspect_parser
    from .record import add_recorder_parsers

    add_check_parser(sub)
    add_inspect_parser(sub)
    add_connect_parser(sub)
    add_recorder_parsers(sub)
    return parser


def _need_cli_extra() -> bool:
    missing = [m for m in ("rich", "textual") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"acp: {INSTALL_HINT} (missing: {', '.join(missing)})", file=sys.stderr)
        return False
    return True


def _chat(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    agent = list(args.agent)
    if agent and agent[0] == "--":
        agent = agent[1:]
    cwd = os.path.abspath(args.cwd or os.getcwd())
    if not os.path.isdir(cwd):
        parser.error(f"--cwd {args.cwd!r} is not a directory")
    if args.json and args.prompt is None:
        parser.error("--json needs --prompt (the interactive app has no JSON output)")
    protocol = args.protocol
    if protocol is None:
        env = os.environ.get(PROTOCOL_ENV, "").strip()
        if env not in ("", "1", "2"):
            parser.error(f"{PROTOCOL_ENV}={env!r}: the ACP version to offer is 1 or 2")
        protocol = int(env or 1)
    if args.url is not None and agent:
        parser.error("give either --url or an agent command, not both")
    if args.url is None and (args.token is not None or args.http):
        parser.error("--token and --http go with --url")
    if args.url is not None:
        from .connect import url_problem  # stdlib only

        problem = url_problem(args.url)
        if problem is not None:
            parser.error(f"--url: {problem}")
    if not _need_cli_extra():
        return 1
    from .chat.oneshot import run_once  # lazily: needs Rich
    from .chat.session import ChatOptions, default_agent_command

    options = ChatOptions(
        agent=agent or default_agent_command(),
        cwd=cwd,
        prompt=args.prompt,
        policy=args.policy,
        json=args.json,
        default_agent=not agent and args.url is None,
        protocol=protocol,
        url=args.url,
        token=args.token or os.environ.get("ACP_TOKEN", "").strip() or None,
        http=args.http,
    )
    if args.prompt is not None:
        return run_once(options)
    from .chat.app import run_app  # lazily: needs Textual

    return run_app(options)


def _demo_agent(args: Sequence[str]) -> int:
    from acpwire.demo import main as serve_demo  # lazily: the CLI does not need it otherwise

    serve_demo(list(args))
    return 0


EXIT_STDOUT_CLOSED = 141
"""128 + SIGPIPE: the status of a Unix tool killed for writing to a closed pipe."""


def _stdout_closed() -> int:
    """stdout's reader is gone: point stdout at /dev/null so the final flush is silent."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (tests)
        pass
    finally:
        os.close(devnull)
    return EXIT_STDOUT_CLOSED


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``acp`` console script; returns (and exits with) the status."""
    try:
        code = _run(sys.argv[1:] if argv is None else list(argv))
        sys.stdout.flush()  # here, not at interpreter exit where a failure is printed
    except BrokenPipeError:
        code = _stdout_closed()
    if argv is None:
        sys.exit(code)
    return code


def _run(argv: list[str]) -> int:
    if argv[:1] == ["demo-agent"]:
        return _demo_agent(argv[1:])
    parser = build_parser()
    agent: list[str] | None = None
    if argv[:1] in (["replay"], ["verify"]) and "--" in argv:
        # FILE, options, then `--` and the agent: argparse cannot put a positional list
        # after another positional with options between them, so the agent is cut here.
        cut = argv.index("--")
        argv, agent = argv[:cut], argv[cut + 1 :]
    args = parser.parse_args(argv)
    if agent is not None:
        args.agent = agent
    if args.command == "chat":
        code = _chat(args, parser)
    elif args.command == "serve":
        from .serve import run as run_serve

        code = run_serve(args, parser)
    elif getattr(args, "handler", None) is not None:
        code = args.handler(args)
    else:
        parser.print_help()
        code = 2
    return code


if __name__ == "__main__":
    main()
