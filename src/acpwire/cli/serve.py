"""``acp serve``: expose a stdio agent (or the demo agent) on a remote ``/acp`` endpoint.

``acp serve [--host 127.0.0.1] [--port 8000] -- AGENT_COMMAND ARGS...`` spawns
one agent process per remote connection (WebSocket or Streamable HTTP) and
copies messages both ways; ``acp serve --demo`` serves the built-in demo agent
in-process. The chosen address is printed to stderr once the server listens.

Secure by default (docs/security.md): clients must send ``Authorization:
Bearer TOKEN``. Tokens come from ``--token`` (repeatable, each its own
principal) or ``$ACP_SERVE_TOKEN``; with neither, a random token is made at
start and printed with the address, as Jupyter does. ``--no-auth`` turns
authentication off, loudly, and only on a loopback address unless
``--no-auth-on-network`` confirms it. ``$ACP_SERVE_TOKEN`` is removed from the
environment once read: the agents the server starts (and whatever they run) get
the server's environment without it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import ipaddress
import logging
import os
import secrets
import shutil
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..agent.app import AgentApp
    from ..server.agent_side import AgentTarget
    from ..server.runner import Tls

__all__ = ["add_arguments", "run"]

INSTALL_HINT = "acp serve needs the remote extra: pip install 'acpwire[remote]'"
TOKEN_ENV = "ACP_SERVE_TOKEN"
MiB = 1024 * 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=int, default=8000, help="port (default: 8000; 0: any free port)"
    )
    parser.add_argument("--path", default="/acp", help="endpoint path (default: /acp)")
    parser.add_argument("--demo", action="store_true", help="serve the built-in demo agent")
    parser.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help="with --demo: where sessions are kept (a path, sqlite:///PATH, postgresql://...; "
        "default: $ACPWIRE_STORE, else the demo's SQLite file)",
    )
    parser.add_argument(
        "--token",
        action="append",
        default=[],
        metavar="TOKEN",
        help=f"accept 'Authorization: Bearer TOKEN' (repeatable; each token is its own "
        f"principal). Default: ${TOKEN_ENV}, else a random token printed at start",
    )
    parser.add_argument(
        "--no-auth",
        action="store_true",
        help="turn authentication off: anyone who can connect runs the agent (not recommended; "
        "refused on an address other than loopback unless --no-auth-on-network is given too)",
    )
    parser.add_argument(
        "--no-auth-on-network",
        action="store_true",
        help="with --no-auth and a --host other than loopback: yes, let anyone who can reach "
        "this address run the agent, read and write your files and run commands as you",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="accept requests carrying this Origin (scheme://host[:port]; repeatable; "
        "default: none, so browsers on other sites are refused)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=None,
        metavar="HOST",
        help="accept this Host header (name or name:port; repeatable; default: loopback "
        "names when listening on loopback, any otherwise). Needed behind a reverse proxy",
    )
    parser.add_argument(
        "--ui",
        action="store_true",
        help="also serve the web client at / on the same port (docs/webui.md); its own "
        "origin is then admitted on the endpoint",
    )
    parser.add_argument("--certfile", help="serve HTTPS/WSS with this certificate (PEM)")
    parser.add_argument("--keyfile", help="the certificate's private key (PEM)")
    parser.add_argument(
        "--worker-cookie",
        metavar="NAME=VALUE",
        help="set this cookie on every answer; clients send it back, so a load balancer "
        "can keep each client on the worker the cookie names",
    )
    parser.add_argument(
        "--websocket-compression",
        action="store_true",
        help="accept per-message deflate on WebSockets (default: off; it costs more CPU "
        "than it saves bandwidth on fast links)",
    )
    parser.add_argument(
        "--owners",
        metavar="FILE",
        help="keep which principal owns which session in FILE, across restarts "
        "(default: in memory; with --demo in its session store, shared by every worker "
        "on the same --store)",
    )
    parser.add_argument(
        "--max-agents",
        type=int,
        default=None,
        help="agents running at once, over all clients (default: 64)",
    )
    parser.add_argument(
        "--max-message-size",
        type=int,
        default=16,
        metavar="MIB",
        help="largest message either way, in MiB (default: 16)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        default=1800.0,
        help="close a connection after this many seconds without messages (0: never)",
    )
    parser.add_argument(
        "--resumable",
        action="store_true",
        help="resume streams by cursor (the durable transport draft, docs/remote.md): a "
        "cursor on every message, initialize advertises transport.resumable, a resumed "
        "stream says where each turn is; connections outlive their streams for --grace",
    )
    parser.add_argument(
        "--retention",
        type=int,
        default=None,
        metavar="MESSAGES",
        help="messages each stream keeps for a client that resumes it (default: 256; "
        "with --resumable, 10000)",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long a connection no client holds a stream of is kept for its client to "
        "resume (default: 60)",
    )
    parser.add_argument(
        "--keepalive",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="interval of SSE keepalive comments (and, with --resumable, WebSocket pings; "
        "default: 15)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="log each connection (principal, peer, id, duration, messages, bytes), "
        "refused requests and the agents' stderr",
    )
    parser.add_argument("agent", nargs=argparse.REMAINDER, help="-- AGENT_COMMAND ARGS...")


RESUMABLE_RETENTION = 10_000
"""Messages each stream keeps with ``--resumable``: a turn streams thousands of chunks, and
a client cut off mid-turn may have missed what the socket buffers held (megabytes)."""
RESUMABLE_BYTES = 32 * MiB
"""Bytes all the streams of a connection keep with ``--resumable``."""


def _say(text: str) -> None:
    print(f"acp serve: {text}", file=sys.stderr, flush=True)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    agent = list(args.agent)
    if agent and agent[0] == "--":
        agent = agent[1:]
    if args.demo == bool(agent):
        parser.error("acp serve: give either --demo or -- AGENT_COMMAND ARGS...")
    if args.store is not None and not args.demo:
        parser.error("acp serve: --store is for --demo (a stdio agent keeps its own sessions)")
    if args.no_auth and args.token:
        parser.error("acp serve: --no-auth and --token contradict each other")
    if args.no_auth_on_network and not args.no_auth:
        parser.error("acp serve: --no-auth-on-network only confirms --no-auth")
    if args.no_auth and not _is_loopback(args.host) and not args.no_auth_on_network:
        parser.error(
            f"acp serve: --no-auth on {args.host} lets anyone who can reach that address run "
            "the agent as you; listen on 127.0.0.1, or add --no-auth-on-network if you mean it"
        )
    if (args.keyfile is None) != (args.certfile is None):
        parser.error("acp serve: --certfile and --keyfile go together")
    if args.max_message_size < 1:
        parser.error("acp serve: --max-message-size must be at least 1 (MiB)")
    if args.max_agents is not None and args.max_agents < 1:
        parser.error("acp serve: --max-agents must be at least 1")
    if args.retention is not None and args.retention < 1:
        parser.error("acp serve: --retention must be at least 1 (message)")
    if args.grace is not None and args.grace <= 0:
        parser.error("acp serve: --grace must be more than 0 (seconds)")
    if not 0 < args.keepalive <= 300:
        parser.error("acp serve: --keepalive must be more than 0 and at most 300 (seconds)")
    if args.worker_cookie is not None:
        from ..server.asgi import check_cookie

        try:
            check_cookie(args.worker_cookie)
        except ValueError as exc:
            parser.error(f"acp serve: --worker-cookie: {exc}")
    if args.ui:
        from ..server.ui import UI_PATHS

        if args.path.rstrip("/") in UI_PATHS:
            parser.error(
                f"acp serve: --ui serves its page at /: give --path other than {args.path}"
            )
    missing = [m for m in ("hypercorn", "websockets") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"acp: {INSTALL_HINT} (missing: {', '.join(missing)})", file=sys.stderr)
        return 1
    if agent:
        command = agent[0]
        if (shutil.which(command) if os.sep not in command else command) is None:
            print(f"acp serve: agent command not found: {command!r}", file=sys.stderr)
            return 3
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="acp serve: %(message)s",
    )
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(_serve(args, agent))
    return 130


@dataclass
class _Auth:
    tokens: list[str]
    """Empty with --no-auth."""
    generated: bool
    """The one token was made here and must be shown."""
    sole_principal: str | None
    """The server's only principal, if it has only one (the default session owner)."""


def _auth(args: argparse.Namespace) -> _Auth:
    """Tokens from --token, else $ACP_SERVE_TOKEN, else a generated one. Raises ValueError.

    ``$ACP_SERVE_TOKEN`` leaves the environment here, whatever the options: the agents
    this server spawns inherit its environment, and the token must not reach them.
    """
    from ..server.security import ANONYMOUS, BearerTokens

    from_env = os.environ.pop(TOKEN_ENV, "").strip()
    if args.no_auth:
        return _Auth([], False, ANONYMOUS)
    generated = False
    if args.token:
        tokens = list(args.token)
    elif from_env:
        tokens = [from_env]
    else:
        tokens, generated = [secrets.token_urlsafe(32)], True
    principals = BearerTokens(tokens).principals
    return _Auth(tokens, generated, next(iter(principals)) if len(principals) == 1 else None)


async def _serve(args: argparse.Namespace, agent: Sequence[str]) -> int:
    from ..server import StdioBridge
    from ..server.runner import tls_options

    try:
        tls = tls_options(args.certfile, args.keyfile)
    except (OSError, ValueError) as exc:
        _say(f"cannot use the certificate: {exc}")
        return 1
    try:
        auth = _auth(args)
    except ValueError as exc:
        _say(f"bad token: {exc}")
        return 2
    if any(len(t) < 16 for t in auth.tokens):
        _say("warning: a token shorter than 16 characters can be guessed")
    demo = None
    target: AgentTarget
    owners_file = args.owners
    if args.demo:
        try:
            demo = _demo_app(args.store)
        except (ValueError, ImportError) as exc:
            _say(f"--store: {exc}")
            return 2
        target = demo
    else:
        target = StdioBridge(agent[0], agent[1:])
    try:
        return await _serve_target(args, target, auth, tls, owners_file)
    finally:
        if demo is not None:
            await demo.aclose()


def _demo_app(store: str | None) -> AgentApp:
    """The demo agent ``acp serve --demo`` hosts, its sessions in the store ``--store``
    names (a URL or path; None: ``$ACPWIRE_STORE``, else the demo's SQLite file).

    Sessions survive a restart in that store, as tests/server/test_reconnect.py shows (it
    kills and restarts ``acp serve --demo`` mid-session).
    """
    from ..demo import build_app

    return build_app(store if store is not None else True)


async def _serve_target(
    args: argparse.Namespace,
    target: AgentTarget,
    auth: _Auth,
    tls: Tls | None,
    owners_file: str | None,
) -> int:
    from ..server import Limits, SessionOwners, asgi_app
    from ..server.runner import bind, serve, url_of
    from ..store import OwnerLedger

    try:
        # The demo keeps owners in its store (shared by every worker on one database).
        store: object = getattr(target, "store", None)
        ledger = store if isinstance(store, OwnerLedger) else None
        owners = SessionOwners(owners_file, ledger=ledger, default_owner=auth.sole_principal)
    except OSError as exc:
        _say(f"cannot use the owners file {owners_file}: {exc}")
        return 1
    defaults = Limits()
    max_agents = args.max_agents or defaults.max_agents
    alone = auth.sole_principal is not None  # per-principal caps only share among several
    retention = args.retention or (RESUMABLE_RETENTION if args.resumable else None)
    limits = Limits(
        resume_messages=retention or defaults.resume_messages,
        resume_bytes=max(defaults.resume_bytes, RESUMABLE_BYTES if args.resumable else 0),
        resume_timeout=args.grace or defaults.resume_timeout,
        max_message_size=args.max_message_size * MiB,
        idle_timeout=args.idle_timeout or None,
        max_agents=max_agents,
        max_agents_per_principal=max_agents
        if alone
        else min(max_agents, defaults.max_agents_per_principal),
        max_connections_per_principal=defaults.max_connections
        if alone
        else defaults.max_connections_per_principal,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # --no-auth is announced below, in words
        app = asgi_app(
            target,
            auth=None if args.no_auth else auth.tokens,
            path=args.path,
            allowed_hosts=args.allow_host,
            allowed_origins=args.allow_origin,
            limits=limits,
            owners=owners,
            cookie=args.worker_cookie,
            keepalive=args.keepalive,
            resumable=args.resumable,
            ui=args.ui,
        )
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        _say(f"cannot listen on {args.host}:{args.port}: {exc}")
        owners.close()
        return 1
    url = url_of(sock, args.path, tls=tls is not None)
    ws_url = ("wss" if tls else "ws") + "://" + url.split("://", 1)[1]
    _say(f"listening on {url} (WebSocket: {ws_url})")
    if args.ui:
        _say(f"web client: {url.rsplit(args.path, 1)[0]}/")
    if auth.generated:
        _say(f"token: {auth.tokens[0]}")
        _say(
            f'clients send "Authorization: Bearer <token>"; set ${TOKEN_ENV} or --token '
            "to choose it"
        )
    if args.no_auth:
        _say(
            "WARNING: authentication is OFF (--no-auth): anyone who can connect can run "
            "the agent, read and write your files and run commands as you"
        )
    if tls is None and not _is_loopback(args.host):
        _say(
            f"WARNING: listening on {args.host} without TLS: the token and every message "
            "(prompts, file contents, command output) cross the network in clear text and "
            "can be read or changed on the way. Use --certfile/--keyfile or a TLS reverse proxy"
        )
    try:
        await serve(app, sock, tls=tls, websocket_compression=args.websocket_compression)
    finally:
        await app.aclose()
        sock.close()
    return 0
