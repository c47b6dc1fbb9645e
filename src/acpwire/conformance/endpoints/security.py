"""Who may reach the agent behind an endpoint, and who may see what (docs/security.md).

Tried from outside, as an attacker would, with hand-written requests where the attack
needs control over the head (:func:`~.target.raw_request`):

* **authentication**: ``initialize`` and the WebSocket upgrade without credentials and
  with a wrong bearer token are refused with 401, and the 401 says which scheme to use;
* **browsers**: a foreign ``Origin`` (a page on another site) and, on a loopback URL, a
  foreign ``Host`` (DNS rebinding) are refused even with valid credentials;
* **principals** (with ``--token2``): the second principal gets 404 for the first one's
  connection id, and cannot list, load, resume or prompt its session, while the first
  principal can attach its session from a second connection;
* **connection ids** are all different and long enough not to be guessed;
* **limits**: a POST that announces a 1 GiB body is refused with 413 before it is sent.

A request the endpoint wrongly served is cleaned up (its connection deleted).
"""

from __future__ import annotations

import asyncio
import math
import secrets
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..agents.driver import BARE_CAPABILITIES, PING_METHOD, Answer, BareClient, Run
from ..registry import Check, Group
from ..wire import Wire, dict_of, dicts
from .http import NOT_OFFERED
from .stage import EndpointStage
from .target import (
    JSON,
    HttpConnection,
    RawAnswer,
    initialize_request,
    is_response_to,
    random_id,
    raw_request,
    rpc,
    websocket_upgrade_headers,
)

__all__ = [
    "AUTH_CHALLENGE",
    "AUTH_INVALID_TOKEN",
    "AUTH_REQUIRED",
    "BODY_LIMIT",
    "CONNECTION_IDS",
    "FOREIGN_ORIGIN",
    "GROUP",
    "PRINCIPAL_CONNECTIONS",
    "PRINCIPAL_SESSIONS",
    "REATTACH",
    "REBINDING_HOST",
    "SecurityChecks",
    "id_bits",
]

GROUP = Group("endpoint", stage="security")
AUTH_REQUIRED = GROUP.check(
    "auth-required",
    "without credentials, initialize gets 401 and the WebSocket upgrade is refused",
    proves=("SEC-001",),
)
AUTH_INVALID_TOKEN = GROUP.check(
    "auth-invalid-token",
    "with a wrong bearer token, initialize gets 401 and the upgrade is refused",
    proves=("SEC-002",),
    needs=("token",),
)
AUTH_CHALLENGE = GROUP.check(
    "auth-challenge", "a 401 carries WWW-Authenticate", proves=("SEC-003",)
)
FOREIGN_ORIGIN = GROUP.check(
    "foreign-origin",
    "a foreign Origin is refused on POST and on the WebSocket upgrade",
    proves=("SEC-004",),
)
REBINDING_HOST = GROUP.check(
    "rebinding-host",
    "a foreign Host (DNS rebinding) is refused on POST and on the WebSocket upgrade",
    proves=("SEC-005",),
    needs=("loopback",),
)
PRINCIPAL_CONNECTIONS = GROUP.check(
    "principal-connections",
    "another principal's connection id is answered as an unknown one; it goes on",
    proves=("SEC-006",),
    needs=("token2",),
)
PRINCIPAL_SESSIONS = GROUP.check(
    "principal-sessions",
    "another principal cannot list, load, resume or prompt a session",
    proves=("SEC-007",),
    needs=("token2", "session"),
)
REATTACH = GROUP.check(
    "reattach",
    "the owner attaches its session from a second connection",
    proves=("SEC-008",),
    needs=("attach",),
)
CONNECTION_IDS = GROUP.check(
    "connection-ids",
    "connection ids are all different, with at least 128 bits each",
    proves=("SEC-009",),
)
BODY_LIMIT = GROUP.check(
    "body-limit",
    "a POST declaring a 1 GiB body gets 413 before the body is sent",
    proves=("SEC-010",),
)

MakeRun = Callable[..., Run]
"""``make(name, token=None)``: a run over the endpoint as ``token``'s principal."""

EVIL_ORIGIN = "https://evil.example"
EVIL_HOST = "rebind.evil.example"
DECLARED_BODY = 1 << 30
"""The body size the body-limit probe announces (1 GiB) and never sends."""
MIN_ID_BITS = 128
UPGRADE_REFUSALS = frozenset({401, 403})
"""How a WebSocket upgrade without valid credentials is refused: 401, or 403 from servers
that cannot answer an upgrade with a status of their choosing."""
_HEX = frozenset(string.hexdigits)
_B64 = frozenset(string.ascii_letters + string.digits + "-_+/")


def id_bits(value: str) -> float:
    """At most how many random bits an id can hold, judged by its length and alphabet."""
    chars = value.rstrip("=")
    if set(chars) <= set(string.digits):
        return len(chars) * math.log2(10)
    if set(chars) <= _HEX | {"-"}:
        return 4.0 * sum(c != "-" for c in chars)  # hex, UUID dashes aside
    if set(chars) <= set(string.ascii_lowercase + string.digits):
        return len(chars) * math.log2(36)
    if set(chars) <= _B64:
        return len(chars) * 6.0
    return len(chars) * math.log2(95)


def _client_error(status: int) -> bool:
    return 400 <= status < 500


def _problem(answer: RawAnswer, what: str, refusal: Callable[[int], bool]) -> str | None:
    """What was wrong with the answer to a request the endpoint must refuse (None: refused)."""
    if answer.status is not None and refusal(answer.status):
        return None
    if answer.status == 101:
        return f"{what} was upgraded"
    if answer.status is not None and 200 <= answer.status < 300:
        return f"{what} was served ({answer.describe()})"
    return f"{what} answered {answer.describe()}"


def _problems(*found: str | None) -> list[str]:
    return [p for p in found if p is not None]


@dataclass
class SecurityChecks(EndpointStage):
    """The ``security`` stage of an endpoint check."""

    connection_ids: list[str] = field(default_factory=list[str])
    """Connection ids the endpoint issued to the security checks' own runs."""
    challenges: list[RawAnswer] = field(default_factory=list[RawAnswer])
    """Every 401 seen (for ``auth-challenge``)."""
    auth_judged: asyncio.Event = field(default_factory=asyncio.Event)
    serves_anyone: bool = False
    """Requests without credentials are served: there is one principal, anyone."""

    async def run(self) -> None:
        await asyncio.gather(self.auth(), self.browsers(), self.body_limit(), self.principals())
        self._judge_challenges()

    # -- plumbing ----------------------------------------------------------------------

    async def initialize(self, headers: dict[str, str], request_id: str) -> RawAnswer:
        """POST initialize with exactly these headers; a connection it opened is deleted."""
        answer = await raw_request(
            self.target,
            "POST",
            {**headers, **JSON},
            self.options.quick,
            body=initialize_request(request_id),
        )
        if answer.status == 401:
            self.challenges.append(answer)
        opened = answer.headers.get("acp-connection-id")
        if answer.status == 200 and opened:
            forget = {**self.target.request_headers(), "Acp-Connection-Id": opened}
            await raw_request(self.target, "DELETE", forget, self.options.quick)
        return answer

    async def upgrade(self, headers: dict[str, str]) -> RawAnswer:
        """A WebSocket upgrade with exactly these headers (closed as soon as answered)."""
        answer = await raw_request(
            self.target, "GET", {**headers, **websocket_upgrade_headers()}, self.options.quick
        )
        if answer.status == 401:
            self.challenges.append(answer)
        return answer

    async def _reachable(self) -> str | None:
        """Why the checks that need the checker's own access cannot judge (None: they can)."""
        await self.reach.reached.wait()
        return self.report.blocked

    # -- authentication ----------------------------------------------------------------

    async def auth(self) -> None:
        if not self.v.wants(AUTH_REQUIRED, AUTH_INVALID_TOKEN, AUTH_CHALLENGE):
            return
        anonymous = self.target.request_headers(credentials=False)
        post, ws = await asyncio.gather(
            self.initialize(anonymous, "acp-check-anonymous"), self.upgrade(anonymous)
        )
        await self.reach.reached.wait()
        refused = {401}
        if self.reach.http_offered is False and not self.report.blocked:
            refused |= NOT_OFFERED  # no Streamable HTTP at all: nothing to serve
        problems = _problems(
            _problem(post, "initialize without credentials", refused.__contains__),
            _problem(
                ws, "the WebSocket upgrade without credentials", UPGRADE_REFUSALS.__contains__
            ),
        )
        self.v.verdict(AUTH_REQUIRED, problems, "401")
        self.serves_anyone = post.status == 200 or ws.status == 101
        self.auth_judged.set()
        if self.serves_anyone:
            reason = "the endpoint serves without credentials (see auth-required)"
            self.v.record(AUTH_INVALID_TOKEN, "skip", reason)
            return
        if self.target.bearer is None:
            self.v.record(AUTH_INVALID_TOKEN, "skip", "no bearer token given (--token)")
            return
        wrong = self.target.request_headers(token="acp-check-wrong-" + secrets.token_hex(16))
        post, ws = await asyncio.gather(
            self.initialize(wrong, "acp-check-wrong-token"), self.upgrade(wrong)
        )
        problems = _problems(
            _problem(post, "initialize with a wrong token", refused.__contains__),
            _problem(ws, "the WebSocket upgrade with a wrong token", UPGRADE_REFUSALS.__contains__),
        )
        self.v.verdict(AUTH_INVALID_TOKEN, problems, "401")

    def _judge_challenges(self) -> None:
        if not self.challenges:
            self.v.record(AUTH_CHALLENGE, "skip", "no 401 answer to look at")
            return
        missing = [a for a in self.challenges if not a.headers.get("www-authenticate")]
        if missing:
            self.v.fail(AUTH_CHALLENGE, f"{len(missing)} 401 answer(s) without WWW-Authenticate")
        else:
            schemes = {a.headers["www-authenticate"].split(" ", 1)[0] for a in self.challenges}
            self.v.record(AUTH_CHALLENGE, "pass", f"WWW-Authenticate: {', '.join(sorted(schemes))}")

    # -- browsers ----------------------------------------------------------------------

    async def browsers(self) -> None:
        if not self.v.wants(FOREIGN_ORIGIN, REBINDING_HOST):
            return
        blocked = await self._reachable()
        if blocked:
            self.v.record(FOREIGN_ORIGIN, "skip", blocked)
            self.v.record(REBINDING_HOST, "skip", blocked)
            return
        headers = self.target.request_headers()
        evil = {
            **{k: v for k, v in headers.items() if k.lower() != "origin"},
            "Origin": EVIL_ORIGIN,
        }
        await self._must_refuse(FOREIGN_ORIGIN, evil, f"Origin: {EVIL_ORIGIN}")
        if not self.target.loopback:
            self.v.record(
                REBINDING_HOST,
                "n/a",
                f"{self.target.hostname} is not a loopback address (authentication protects it)",
            )
            return
        rebound = {**headers, "Host": f"{EVIL_HOST}:{self.target.port}"}
        await self._must_refuse(REBINDING_HOST, rebound, f"Host: {EVIL_HOST}")

    async def _must_refuse(self, key: Check, headers: dict[str, str], what: str) -> None:
        """``initialize`` and the upgrade with ``headers`` must both get a 4xx."""
        post, ws = await asyncio.gather(self.initialize(headers, key.key), self.upgrade(headers))
        problems = _problems(
            _problem(post, what, _client_error),
            _problem(ws, f"the upgrade with {what}", _client_error),
        )
        self.v.verdict(key, problems, f"refused: {post.describe()}, upgrade {ws.describe()}")

    # -- limits ------------------------------------------------------------------------

    async def body_limit(self) -> None:
        if not self.v.wants(BODY_LIMIT):
            return
        blocked = await self._reachable()
        if blocked:
            return self.v.record(BODY_LIMIT, "skip", blocked)
        if self.reach.http_offered is False:
            return self.v.record(BODY_LIMIT, "n/a", "no Streamable HTTP")
        answer = await raw_request(
            self.target,
            "POST",
            {**self.target.request_headers(), **JSON},
            self.options.quick,
            declared_length=DECLARED_BODY,
        )
        if answer.status == 413:
            self.v.record(BODY_LIMIT, "pass")
        elif answer.status is None and "no answer" in (answer.problem or ""):
            self.v.fail(BODY_LIMIT, f"{answer.problem}: the endpoint waits for a 1 GiB body")
        else:
            self.v.fail(BODY_LIMIT, f"a POST announcing 1 GiB answered {answer.describe()}")

    # -- principals --------------------------------------------------------------------

    async def principals(self) -> None:
        if self.target.token2 is not None and self.v.wants(AUTH_REQUIRED):
            await self.auth_judged.wait()
        await asyncio.gather(self._connections(), self._sessions())

    def _one_principal(self, key: Check) -> bool:
        """Skip ``key`` when the endpoint cannot tell principals apart at all."""
        if self.serves_anyone:
            reason = "the endpoint serves without credentials: one principal (see auth-required)"
            self.v.record(key, "skip", reason)
        return self.serves_anyone

    async def _connections(self) -> None:
        key = PRINCIPAL_CONNECTIONS
        if not self.v.wants(key):
            return
        if self.target.token2 is None:
            return self.v.record(key, "skip", "needs --token2 (a second principal's token)")
        blocked = await self._reachable()
        if blocked:
            return self.v.record(key, "skip", blocked)
        if self._one_principal(key):
            return
        if self.reach.http_offered is False:
            return self.v.record(key, "n/a", "no Streamable HTTP: connection ids are not used")
        owner = HttpConnection(self.target, self.options.quick)
        other = HttpConnection(self.target, self.options.quick, token=self.target.token2)
        try:
            await self._judge_connections(owner, other)
        finally:
            await asyncio.gather(owner.close(), other.close())

    async def _judge_connections(self, owner: HttpConnection, other: HttpConnection) -> None:
        key = PRINCIPAL_CONNECTIONS
        await owner.initialize("acp-check-owner")
        if owner.id is None:
            return self.v.record(key, "skip", f"initialize: {owner.problem or 'no connection'}")
        self.connection_ids.append(owner.id)
        _, stream = await owner.open_stream()
        if stream is None:
            return self.v.record(key, "skip", "the owner's GET stream did not open")
        problems: list[str] = []
        for method, extra, content in (
            ("POST", JSON, rpc(PING_METHOD, {}, "acp-check-intruder")),
            ("GET", {"accept": "text/event-stream"}, None),
            ("DELETE", {}, None),
        ):
            answers: list[int | None] = []
            for connection_id in (random_id(), owner.id):
                headers = {**extra, "acp-connection-id": connection_id}
                answer = await other.request(
                    method, headers=headers, content=content, connection=False
                )
                answers.append(answer.status_code if answer is not None else None)
            unknown, theirs = answers
            if 401 in answers:
                return self.v.record(key, "skip", "the endpoint refused --token2 (HTTP 401)")
            if theirs is None or theirs < 400 or theirs != unknown:
                problems.append(
                    f"{method} with the other principal's id answered {theirs or other.problem}"
                    f" (an unknown id: {unknown})"
                )
        posted = await owner.post(rpc(PING_METHOD, {}, "acp-check-owner-ping"))
        if posted is None or not posted.is_success:
            problems.append("the owner's connection no longer takes POSTs")
        elif (
            await stream.wait_for(is_response_to("acp-check-owner-ping"), self.options.quick)
            is None
        ):
            problems.append("the owner's stream no longer delivers answers")
        self.v.verdict(key, problems, "answered as unknown ids; the owner went on")

    async def _sessions(self) -> None:
        keys = (PRINCIPAL_SESSIONS, REATTACH)
        if not self.v.wants(*keys):
            return
        blocked = await self._reachable()
        if blocked:
            for key in keys:
                self.v.record(key, "skip", blocked)
            return
        wire = Wire()
        runs: list[Run] = []

        def run(name: str, token: str | None = None) -> Run:
            opener = self.target.opener(token=token, timeout=self.options.quick)
            made = Run(
                name, wire, [], None, BareClient, BARE_CAPABILITIES, self.options.quick, opener
            )
            runs.append(made)
            return made

        try:
            await self._judge_sessions(run)
        finally:
            for made in runs:
                connection_id = getattr(made.transport, "connection_id", None)
                if isinstance(connection_id, str):
                    self.connection_ids.append(connection_id)
                await made.close()

    async def _start(self, run: Run) -> tuple[dict[str, Any] | None, str]:
        """(the agent's capabilities, or None with why it could not start)."""
        if not await run.start():
            return None, f"cannot connect: {run.start_problem}"
        answer = await run.initialize(timeout=self.options.timeout)
        if not answer.ok:
            return None, f"initialize: {answer.describe()}"
        return dict_of(dict_of(answer.result).get("agentCapabilities")), ""

    async def _judge_sessions(self, make: MakeRun) -> None:
        timeout = self.options.timeout
        owner = make("owner")
        caps, why = await self._start(owner)
        if caps is None:
            self.v.record(PRINCIPAL_SESSIONS, "skip", why)
            self.v.record(REATTACH, "skip", why)
            return
        answer = await owner.call("session/new", {"cwd": self.cwd, "mcpServers": []}, timeout)
        session_id = dict_of(answer.result).get("sessionId")
        if not isinstance(session_id, str):
            why = f"session/new: {answer.describe()}"
            self.v.record(PRINCIPAL_SESSIONS, "skip", why)
            self.v.record(REATTACH, "skip", why)
            return
        prompt = [{"type": "text", "text": self.options.prompt}]
        await owner.call("session/prompt", {"sessionId": session_id, "prompt": prompt}, timeout)
        await self._reattach(make, caps, session_id)
        await self._intrude(make, session_id, prompt)

    async def _attach(self, run: Run, caps: dict[str, Any], session_id: str) -> Answer | None:
        """``session/load`` or ``session/resume`` of ``session_id``, whichever is offered."""
        params: dict[str, Any] = {"sessionId": session_id, "cwd": self.cwd, "mcpServers": []}
        if caps.get("loadSession") is True:
            return await run.call("session/load", params, self.options.timeout)
        if "resume" in dict_of(caps.get("sessionCapabilities")):
            return await run.call("session/resume", params, self.options.timeout)
        return None

    async def _reattach(self, make: MakeRun, caps: dict[str, Any], session_id: str) -> None:
        if not self.v.wants(REATTACH):
            return
        again = make("owner-again")
        agent_caps, why = await self._start(again)
        if agent_caps is None:
            return self.v.record(REATTACH, "skip", why)
        answer = await self._attach(again, caps, session_id)
        if answer is None:
            self.v.record(REATTACH, "n/a", "the agent offers neither session/load nor resume")
        elif answer.ok:
            self.v.record(REATTACH, "pass")
        else:
            self.v.fail(REATTACH, f"the owner's second connection: {answer.describe()}")

    async def _intrude(self, make: MakeRun, session_id: str, prompt: list[dict[str, Any]]) -> None:
        key = PRINCIPAL_SESSIONS
        if not self.v.wants(key):
            return
        if self.target.token2 is None:
            return self.v.record(key, "skip", "needs --token2 (a second principal's token)")
        if self._one_principal(key):
            return
        other = make("other", self.target.token2)
        caps, why = await self._start(other)
        if caps is None:
            return self.v.record(key, "skip", f"--token2: {why}")
        timeout = self.options.timeout
        problems: list[str] = []
        if "list" in dict_of(caps.get("sessionCapabilities")):
            listed = await other.call("session/list", {}, timeout)
            ids = [s.get("sessionId") for s in dicts(dict_of(listed.result).get("sessions") or ())]
            if session_id in ids:
                problems.append("session/list shows the other principal's session")
        attached = await self._attach(other, caps, session_id)
        if attached is not None and attached.ok:
            problems.append("it attached the other principal's session")
        params = {"sessionId": session_id, "prompt": prompt}
        if (await other.call("session/prompt", params, timeout)).ok:
            problems.append("it prompted the other principal's session")
        seen = other.updates(session_id, 0)
        if seen:
            problems.append(f"it received {len(seen)} update(s) of the other principal's session")
        self.v.verdict(key, problems, "not listed; attach and prompt refused")

    # -- connection ids ----------------------------------------------------------------

    def judge_connection_ids(self) -> None:
        ids = self.reach.connection_ids + self.connection_ids
        if not ids:
            return self.v.record(CONNECTION_IDS, "skip", "no connection id was issued")
        problems: list[str] = []
        if len(set(ids)) < len(ids):
            problems.append("the same id was issued twice")
        weak = [i for i in ids if id_bits(i) < MIN_ID_BITS]
        if weak:
            problems.append(
                f"{weak[0]!r} holds at most {id_bits(weak[0]):.0f} bits ({MIN_ID_BITS} needed)"
            )
        least = min(id_bits(i) for i in ids)
        self.v.verdict(CONNECTION_IDS, problems, f"{len(ids)} ids, at least {least:.0f} bits each")
