"""The endpoint's Streamable HTTP profile (the RFD's, revision of 2026-04-23), checked live.

Each part runs on connections of its own, side by side:

* **http**: one connection driven step by step as a strict client of the RFD:
  ``initialize`` (200, JSON, ``Acp-Connection-Id``), refused requests (406, 400, 404,
  415, 501, a session-scoped POST without ``Acp-Session-Id``), then *one* GET stream on
  which ``session/new``'s answer, a turn's updates, the agent's requests and the turn's
  answer must all arrive while every POST is answered 202. If the stream's events carry
  ids, it is dropped and reopened with ``Last-Event-ID``. ``DELETE`` ends it all.
* **keepalive**: a connection that only listens; its stream must not stay silent longer
  than ``--keepalive-wait``.
* **http2**: the HTTP/2 connection preface (h2c with prior knowledge) on ``http``, ALPN on
  ``https``; with the ``h2`` package installed, a real ``initialize`` over HTTP/2 too.

Failures name what the endpoint answered. The RFD is a draft; each rule cites its section
(:mod:`acpwire.conformance.requirements`, ids ``RFD-*``).
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from typing import TYPE_CHECKING, Any

import msgspec

from ...protocol.cursors import STREAM_IN_USE, cursor_of
from ...protocol.errors import ErrorCode
from ...transports._durable import resumable_of
from ..agents.driver import PING_METHOD
from ..registry import Group
from ..wire import as_dict, dict_of, short
from .stage import REFUSED_CREDENTIALS, EndpointStage
from .target import (
    EVENT_STREAM,
    JSON,
    HttpConnection,
    SseEvent,
    SseStream,
    alpn_protocol,
    h2c_answer,
    initialize_request,
    is_response_to,
    random_id,
    rpc,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "COOKIES",
    "GROUP",
    "HTTP2",
    "HTTP_ACCEPT",
    "HTTP_ACCEPTED",
    "HTTP_BATCH",
    "HTTP_CONTENT_TYPE",
    "HTTP_DELETE",
    "HTTP_INITIALIZE",
    "HTTP_MISSING_CONNECTION",
    "HTTP_ROUTING",
    "HTTP_SESSION_HEADER",
    "HTTP_STREAM",
    "HTTP_UNKNOWN_CONNECTION",
    "NOT_OFFERED",
    "STREAM_KEEPALIVE",
    "STREAM_RESUME",
    "CURSOR_EVERY_MESSAGE",
    "CURSOR_REPLAY",
    "CURSOR_UNKNOWN",
    "HttpChecks",
]

GROUP = Group("endpoint", stage="http")
HTTP_INITIALIZE = GROUP.check(
    "http-initialize",
    "POST initialize is answered 200 with its JSON-RPC response and Acp-Connection-Id",
    proves=("RFD-HTTP-001",),
)
HTTP_ACCEPTED = GROUP.check(
    "http-accepted",
    "other POSTs (request, notification, response) are answered 202 with no body",
    proves=("RFD-HTTP-002",),
)
HTTP_STREAM = GROUP.check(
    "http-stream", "GET with Acp-Connection-Id opens an SSE stream", proves=("RFD-HTTP-003",)
)
HTTP_ROUTING = GROUP.check(
    "http-routing",
    "session/new's answer, a turn's updates and its answer come on the one GET stream",
    proves=("RFD-HTTP-004",),
    needs=("turn",),
)
HTTP_CONTENT_TYPE = GROUP.check(
    "http-content-type",
    "a POST that is not application/json gets 415",
    proves=("RFD-HTTP-005",),
)
HTTP_ACCEPT = GROUP.check(
    "http-accept", "a GET not accepting text/event-stream gets 406", proves=("RFD-HTTP-006",)
)
HTTP_MISSING_CONNECTION = GROUP.check(
    "http-missing-connection",
    "POST, GET and DELETE without Acp-Connection-Id get 400",
    proves=("RFD-HTTP-007",),
)
HTTP_UNKNOWN_CONNECTION = GROUP.check(
    "http-unknown-connection",
    "POST and GET with an unknown Acp-Connection-Id get 404",
    proves=("RFD-HTTP-008",),
)
HTTP_SESSION_HEADER = GROUP.check(
    "http-session-header",
    "a session-scoped POST without Acp-Session-Id gets 400",
    proves=("RFD-HTTP-009",),
    needs=("session",),
)
HTTP_BATCH = GROUP.check("http-batch", "a JSON-RPC batch gets 501", proves=("RFD-HTTP-010",))
HTTP_DELETE = GROUP.check(
    "http-delete",
    "DELETE gets 202, ends the GET stream, and the id is unknown afterwards",
    proves=("RFD-HTTP-011",),
)
HTTP2 = GROUP.check(
    "http2",
    "the endpoint speaks HTTP/2 (h2c prior knowledge, or ALPN h2 over TLS)",
    proves=("RFD-HTTP-012",),
)
COOKIES = GROUP.check(
    "cookies",
    "cookies the endpoint sets are returned by a client to the endpoint",
    proves=("RFD-HTTP-013",),
    needs=("cookies",),
)
STREAM_RESUME = GROUP.check(
    "stream-resume",
    "a stream reopened with Last-Event-ID resumes: nothing lost, nothing repeated",
    proves=("RFD-HTTP-014",),
    needs=("event-ids",),
)
CURSOR_EVERY_MESSAGE = GROUP.check(
    "cursor-every-message",
    "every message on the stream carries its cursor, as the SSE id and in _meta",
    proves=("RFD-DUR-001",),
    needs=("resumable",),
)
CURSOR_REPLAY = GROUP.check(
    "cursor-replay",
    "a stream resumed after a cut replays the same messages with their original cursors",
    proves=("RFD-DUR-002",),
    needs=("resumable",),
)
CURSOR_UNKNOWN = GROUP.check(
    "cursor-unknown",
    "a resume from a cursor the stream never had gets 409 with a reason, no live stream",
    proves=("RFD-DUR-003",),
    needs=("resumable",),
)
STREAM_KEEPALIVE = GROUP.check(
    "stream-keepalive",
    "an idle SSE stream is never silent longer than --keepalive-wait (20 s)",
    proves=("SSE-001",),
)

NOT_OFFERED = frozenset({404, 405, 426})
"""Answers to POST initialize that say the endpoint has no Streamable HTTP profile (the RFD
lets a server offer WebSocket only)."""
NOTICE = "_acpwire_check/notice"
"""An extension notification: every agent ignores it (EXT-006), every endpoint takes it."""
OLD_MODEL = (
    "; it came on a per-session stream (GET with Acp-Session-Id), the RFD's model of "
    "2026-04-01, which its revision of 2026-04-23 replaced by one stream per connection"
)
QUIET_START = 1.0
"""Lines within this many seconds of a stream's opening count as its opening, not as a
keepalive sent on the server's own initiative."""


def _body_of(response: httpx.Response) -> dict[str, Any] | None:
    try:
        return as_dict(msgspec.json.decode(response.content))
    except msgspec.DecodeError:
        return None


def _status(response: httpx.Response | None, conn: HttpConnection) -> str:
    return f"HTTP {response.status_code}" if response is not None else str(conn.problem)


def _answer_agent_request(message: dict[str, Any]) -> bytes:
    """The checker's answer to a request the agent sent: permissions cancelled, the rest
    refused (the checker advertised no client capability)."""
    request_id = message.get("id")
    if message.get("method") == "session/request_permission":
        result: dict[str, Any] = {"outcome": {"outcome": "cancelled"}}
        return msgspec.json.encode({"jsonrpc": "2.0", "id": request_id, "result": result})
    error = {"code": int(ErrorCode.METHOD_NOT_FOUND), "message": "not offered by acp check"}
    return msgspec.json.encode({"jsonrpc": "2.0", "id": request_id, "error": error})


class HttpChecks(EndpointStage):
    """The ``http`` stage of an endpoint check: the Streamable HTTP profile, a stream kept
    alive, HTTP/2."""

    def connection(self, *, token: str | None = None, http2: bool = False) -> HttpConnection:
        return HttpConnection(self.target, self.options.quick, token=token, http2=http2)

    async def run(self) -> None:
        await asyncio.gather(self.http(), self.keepalive(), self.http2())

    # -- Streamable HTTP -------------------------------------------------------------

    async def http(self) -> None:
        conn = self.connection()
        try:
            await self._http(conn)
        finally:
            self.reach.tried("http")
            await conn.close()

    async def _http(self, conn: HttpConnection) -> None:
        v = self.v
        init = await conn.initialize()
        self._reach_after_http(init, conn)
        if not v.wants_stage("http"):
            return
        if init is None:
            return v.skip_stage("http", f"POST initialize: {conn.problem}")
        if init.status_code in REFUSED_CREDENTIALS:
            return v.skip_stage(
                "http", self.refused_credentials("POST initialize", init.status_code)
            )
        if init.status_code in NOT_OFFERED:
            return v.skip_stage(
                "http",
                f"no Streamable HTTP here: POST initialize answered HTTP {init.status_code} "
                "(the RFD lets an endpoint offer WebSocket only)",
            )
        self._judge_initialize(init, conn)
        if conn.id is None:
            return v.skip_stage("http", "POST initialize opened no connection")
        self.reach.connection_ids.append(conn.id)
        await self._refusals(conn)
        response, stream = await self.open_stream(conn)
        if stream is None:
            v.fail(HTTP_STREAM, f"GET with Accept: {EVENT_STREAM}: {_status(response, conn)}")
            return v.skip_stage("http", "the connection's GET stream did not open")
        v.record(HTTP_STREAM, "pass")
        accepted: list[tuple[str, httpx.Response | None]] = []
        session_id = await self._session(conn, stream, accepted)
        if session_id is None:
            v.record(HTTP_SESSION_HEADER, "skip", "no session (see http-routing)")
        else:
            if v.wants(HTTP_ROUTING, HTTP_ACCEPTED):
                await self._turn(conn, stream, session_id, accepted)
            await self._session_header(conn, session_id)
        self._judge_accepted(accepted, conn)
        before = list(stream.events)
        stream = await self._resume(conn, stream)
        resumable = resumable_of(init.content) is not None
        stream = await self._cursors(conn, [*before, *stream.events], stream, resumable)
        await self._delete(conn, stream)
        self._judge_cookies(conn)

    async def open_stream(
        self, conn: HttpConnection, *, last_event_id: str | None = None
    ) -> tuple[httpx.Response | None, SseStream | None]:
        """The connection's GET stream, asked again for a while after a 409: a stream the
        checker just dropped may not be gone on the server's side yet."""
        deadline = time.monotonic() + self.options.quick
        while True:
            response, stream = await conn.open_stream(last_event_id=last_event_id)
            busy = response is not None and response.status_code == 409
            if not busy or time.monotonic() > deadline:
                return response, stream
            await asyncio.sleep(0.05)

    def _reach_after_http(self, init: httpx.Response | None, conn: HttpConnection) -> None:
        self.reach.http_offered = conn.id is not None
        if init is not None and init.status_code in REFUSED_CREDENTIALS:
            self.refused_credentials("POST initialize", init.status_code)
        self.reach.tried("http")

    def _judge_initialize(self, init: httpx.Response, conn: HttpConnection) -> None:
        problems: list[str] = []
        if init.status_code != 200:
            problems.append(f"answered HTTP {init.status_code}: {short(init.text, 100)!r}")
        else:
            if not init.headers.get("content-type", "").startswith("application/json"):
                problems.append(f"Content-Type {init.headers.get('content-type')!r}")
            body = _body_of(init)
            if body is None or body.get("id") != "acp-check-init" or "result" not in body:
                problems.append(f"the body is not the answer to initialize: {short(init.text)!r}")
            if conn.id is None:
                problems.append("no Acp-Connection-Id header")
        self.v.verdict(HTTP_INITIALIZE, problems)

    async def _refusals(self, conn: HttpConnection) -> None:
        """406, 400, 404, 415 and 501: requests the RFD says an endpoint refuses."""
        v, ping = self.v, rpc(PING_METHOD, {}, "acp-check-refused")
        response, stream = await conn.open_stream(accept="application/json")
        if stream is not None:
            await stream.close()
        got = _status(response, conn)
        if response is not None and response.status_code == 406:
            v.record(HTTP_ACCEPT, "pass")
        else:
            v.fail(HTTP_ACCEPT, f"GET with Accept: application/json answered {got}")

        problems: list[str] = []
        for method, content in (("POST", ping), ("GET", None), ("DELETE", None)):
            headers = dict(JSON) if method == "POST" else {"accept": EVENT_STREAM}
            answer = await conn.request(method, headers=headers, content=content, connection=False)
            if answer is None or answer.status_code != 400:
                problems.append(f"{method} answered {_status(answer, conn)}")
        v.verdict(HTTP_MISSING_CONNECTION, problems, "400 to POST, GET and DELETE")

        problems = []
        unknown = random_id()
        for method, content in (("POST", ping), ("GET", None)):
            headers = {"acp-connection-id": unknown}
            headers.update(JSON if method == "POST" else {"accept": EVENT_STREAM})
            answer = await conn.request(method, headers=headers, content=content, connection=False)
            if answer is None or answer.status_code != 404:
                problems.append(f"{method} answered {_status(answer, conn)}")
            if method == "POST" and answer is not None:
                self.reach.unknown_status = answer.status_code
        v.verdict(HTTP_UNKNOWN_CONNECTION, problems, "404 to POST and GET")

        answer = await conn.request(
            "POST",
            headers={"content-type": "text/plain"},
            content=initialize_request("acp-check-text"),
            connection=False,
        )
        if answer is not None and answer.status_code == 415:
            v.record(HTTP_CONTENT_TYPE, "pass")
        else:
            v.fail(HTTP_CONTENT_TYPE, f"initialize as text/plain answered {_status(answer, conn)}")
            await self._forget(answer, conn)

        answer = await conn.post(b"[" + ping + b"]")
        if answer is not None and answer.status_code == 501:
            v.record(HTTP_BATCH, "pass")
        else:
            v.fail(HTTP_BATCH, f"a batch of one request answered {_status(answer, conn)}")

    async def _forget(self, answer: httpx.Response | None, conn: HttpConnection) -> None:
        """DELETE a connection a wrongly accepted ``initialize`` opened."""
        other = answer.headers.get("acp-connection-id") if answer is not None else None
        if other:
            await conn.request("DELETE", headers={"acp-connection-id": other}, connection=False)

    async def _session(
        self,
        conn: HttpConnection,
        stream: SseStream,
        accepted: list[tuple[str, httpx.Response | None]],
    ) -> str | None:
        params: dict[str, Any] = {"cwd": self.cwd, "mcpServers": []}
        accepted.append(
            ("session/new", await conn.post(rpc("session/new", params, "acp-check-new")))
        )
        accepted.append(("a notification", await conn.post(rpc(NOTICE, {}))))
        event = await stream.wait_for(is_response_to("acp-check-new"), self.options.timeout)
        if event is None:
            self.v.fail(HTTP_ROUTING, "session/new's answer did not come on the GET stream")
            return None
        session_id = dict_of(dict_of(event.message).get("result")).get("sessionId")
        if not isinstance(session_id, str):
            self.v.record(HTTP_ROUTING, "skip", f"session/new failed: {short(event.data)}")
            return None
        return session_id

    async def _turn(
        self,
        conn: HttpConnection,
        stream: SseStream,
        session_id: str,
        accepted: list[tuple[str, httpx.Response | None]],
    ) -> None:
        params = {
            "sessionId": session_id,
            "prompt": [{"type": "text", "text": self.options.prompt}],
        }
        start = len(stream.events)
        prompt = rpc("session/prompt", params, "acp-check-prompt")
        accepted.append(("session/prompt", await conn.post(prompt, session_id)))
        answered = is_response_to("acp-check-prompt")

        def wanted(event: SseEvent) -> bool:
            m = event.message
            return answered(event) or (m is not None and "method" in m and "id" in m)

        deadline = time.monotonic() + self.options.timeout
        answer: SseEvent | None = None
        handled = start
        while answer is None and time.monotonic() < deadline:
            found = await stream.wait_for(wanted, deadline - time.monotonic(), since=handled)
            if found is None:
                break
            handled = found.index + 1
            if answered(found):
                answer = found
            else:
                message = dict_of(found.message)
                scope = dict_of(message.get("params")).get("sessionId")
                reply = await conn.post(
                    _answer_agent_request(message), scope if isinstance(scope, str) else None
                )
                accepted.append((f"the answer to {message.get('method')}", reply))
        if answer is None:
            detail = f"the answer to session/prompt did not come on the GET stream within {self.options.timeout:g} s"
            self.v.fail(HTTP_ROUTING, detail + await self._elsewhere(conn, session_id))
            return
        updates = sum(
            1 for e in stream.events[start:] if dict_of(e.message).get("method") == "session/update"
        )
        self.v.record(
            HTTP_ROUTING,
            "pass",
            f"session/new's answer, {updates} update(s) and the turn's answer on one stream",
        )

    async def _elsewhere(self, conn: HttpConnection, session_id: str) -> str:
        """Where a turn's answer went if not on the connection's stream (for the detail)."""
        _, stream = await conn.open_stream(headers={"acp-session-id": session_id})
        if stream is None:
            return ""
        found = await stream.wait_for(is_response_to("acp-check-prompt"), self.options.quick)
        await stream.close()
        return OLD_MODEL if found is not None else ""

    async def _session_header(self, conn: HttpConnection, session_id: str) -> None:
        cancel = rpc("session/cancel", {"sessionId": session_id})
        answer = await conn.post(cancel)
        if answer is not None and answer.status_code == 400:
            self.v.record(HTTP_SESSION_HEADER, "pass")
        else:
            self.v.fail(
                HTTP_SESSION_HEADER,
                f"session/cancel without Acp-Session-Id answered {_status(answer, conn)}",
            )

    def _judge_accepted(
        self, accepted: list[tuple[str, httpx.Response | None]], conn: HttpConnection
    ) -> None:
        problems: list[str] = []
        for what, response in accepted:
            if response is None or response.status_code != 202:
                problems.append(f"{what} answered {_status(response, conn)}")
            elif response.content.strip():
                problems.append(f"{what}: 202 with a body ({short(response.text, 60)!r})")
        kinds = ", ".join(what for what, _ in accepted)
        self.v.verdict(HTTP_ACCEPTED, problems, f"202 with no body: {kinds}")

    # -- resume by cursor (RFD durable-resumable-http-transport) ---------------------

    async def _cursors(
        self, conn: HttpConnection, events: list[SseEvent], stream: SseStream, resumable: bool
    ) -> SseStream:
        """The durable transport draft's cursors, on an endpoint that advertises
        ``transport.resumable``: on every message (``events``: what the connection's
        stream carried so far), replayed as they were after a cut, and a resume from a
        cursor the stream never had refused with 409. The stream to go on with."""
        keys = (CURSOR_EVERY_MESSAGE, CURSOR_REPLAY, CURSOR_UNKNOWN)
        if not resumable:
            for key in keys:
                self.v.record(key, "n/a", "initialize advertises no transport.resumable")
            return stream
        if not self.v.wants(*keys):
            return stream
        sent = [e for e in events if e.event == "message" and _is_ours(e)]
        problems: list[str] = []
        for event in sent:
            cursor = cursor_of(event.data.encode())
            if event.id is None or cursor != event.id:
                problems.append(
                    f"event {event.index}: SSE id {event.id!r}, _meta cursor {cursor!r}"
                )
        self.v.verdict(
            CURSOR_EVERY_MESSAGE, problems[:3], f"{len(sent)} message(s), each with its cursor"
        )
        with_ids = [e for e in sent if e.id is not None]
        if len(with_ids) < 2:
            self.v.record(CURSOR_REPLAY, "skip", "fewer than two messages with ids to replay")
            self.v.record(CURSOR_UNKNOWN, "skip", "no cursor to resume from")
            return stream
        first, rest = with_ids[0], [(e.id, e.data) for e in with_ids[1:]]
        await stream.close()
        response, again = await self.open_stream(conn, last_event_id=first.id)
        if again is None:
            self.v.fail(
                CURSOR_REPLAY, f"GET with Last-Event-ID {first.id}: {_status(response, conn)}"
            )
        else:
            await again.wait_for(lambda e: e.index + 1 >= len(rest), self.options.quick)
            got = [(e.id, e.data) for e in again.events if e.event == "message" and _is_ours(e)]
            problems = []
            if got[: len(rest)] != rest:
                wrong = next(
                    (i for i, (a, b) in enumerate(zip(got, rest, strict=False)) if a != b), len(got)
                )
                problems.append(
                    f"after cursor {first.id}, {len(rest)} message(s) expected as first sent; "
                    f"message {wrong + 1} of the replay differs or is missing"
                )
            self.v.verdict(CURSOR_REPLAY, problems, f"{len(rest)} message(s) replayed as sent")
            await again.close()
        await self._unknown_cursor(conn)
        _, stream_again = await self.open_stream(conn, last_event_id=with_ids[-1].id)
        return stream_again or stream

    async def _unknown_cursor(self, conn: HttpConnection) -> None:
        """GET with a cursor the stream never had: 409 and a reason (a 409 saying the
        stream is still held, or saying nothing, is asked again for a while: the checker
        just dropped it)."""
        deadline = time.monotonic() + self.options.quick
        while True:
            response, stream = await conn.open_stream(last_event_id="999999999")
            if stream is not None:
                await stream.close()
                self.v.fail(CURSOR_UNKNOWN, "a resume from cursor 999999999 opened a stream (200)")
                return
            reason = _reason(response) if response is not None else None
            held = (
                response is not None
                and response.status_code == 409
                and reason in (None, STREAM_IN_USE)
            )
            if held and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                continue
            if response is None or response.status_code != 409 or not isinstance(reason, str):
                status = _status(response, conn)
                self.v.fail(
                    CURSOR_UNKNOWN, f"a resume from cursor 999999999: {status}, reason {reason!r}"
                )
            else:
                self.v.record(CURSOR_UNKNOWN, "pass", f"409, reason {reason!r}")
            return

    async def _resume(self, conn: HttpConnection, stream: SseStream) -> SseStream:
        """Drop the stream and reopen it with Last-Event-ID; the stream to go on with."""
        last = stream.last_event_id
        if last is None:
            self.v.record(STREAM_RESUME, "n/a", "the stream's events carry no ids")
            return stream
        seen = {e.id for e in stream.events if e.id is not None}
        await stream.close()
        posted = await conn.post(rpc(PING_METHOD, {}, "acp-check-resume"))
        if posted is None or not posted.is_success:
            self.v.record(STREAM_RESUME, "skip", f"a POST after the drop: {_status(posted, conn)}")
        response, again = await self.open_stream(conn, last_event_id=last)
        if again is None:
            self.v.fail(STREAM_RESUME, f"GET with Last-Event-ID answered {_status(response, conn)}")
            _, again = await self.open_stream(conn)
            return again or stream
        found = await again.wait_for(is_response_to("acp-check-resume"), self.options.quick)
        repeated = [e.id for e in again.events if e.id in seen]
        problems: list[str] = []
        if found is None:
            problems.append("the answer sent while the stream was away never came")
        if repeated:
            problems.append(
                f"events sent before Last-Event-ID came again: {', '.join(map(str, repeated[:3]))}"
            )
        self.v.verdict(STREAM_RESUME, problems, f"resumed after event {last}")
        return again

    async def _delete(self, conn: HttpConnection, stream: SseStream) -> None:
        problems: list[str] = []
        answer = await conn.delete()
        if answer is None or answer.status_code != 202:
            problems.append(f"DELETE answered {_status(answer, conn)}")
        if not await stream.wait_end(self.options.grace):
            problems.append(f"the GET stream was still open {self.options.grace:g} s after DELETE")
        after = await conn.post(rpc(PING_METHOD, {}, "acp-check-after-delete"))
        # "Unknown" is what the endpoint answers a made-up id (RFD: 404; that is judged
        # by http-unknown-connection, not here).
        unknown = self.reach.unknown_status if self.reach.unknown_status >= 400 else 404
        if after is None or after.status_code != unknown:
            problems.append(
                f"a POST after DELETE answered {_status(after, conn)}, not {unknown} as for "
                "an unknown id"
            )
        else:
            conn.id = None
        self.v.verdict(HTTP_DELETE, problems, "202, the stream ended, then 404")

    def _judge_cookies(self, conn: HttpConnection) -> None:
        if not conn.set_cookies:
            self.v.record(COOKIES, "n/a", "the endpoint set no cookie")
            return
        set_names = {c.split("=", 1)[0].strip() for c in conn.set_cookies if _lasting(c)}
        request = conn.client.build_request("POST", self.target.url)
        returned = {
            part.split("=", 1)[0].strip()
            for part in request.headers.get("cookie", "").split(";")
            if part.strip()
        }
        missing = sorted(set_names - returned)
        if missing:
            self.v.fail(
                COOKIES,
                f"a client does not return {', '.join(missing)} to {self.target.url} "
                f"(check Path, Domain and Secure): {short('; '.join(conn.set_cookies), 120)}",
            )
        else:
            self.v.record(COOKIES, "pass", f"returned: {', '.join(sorted(returned))}")

    # -- keepalive ---------------------------------------------------------------------

    async def keepalive(self) -> None:
        wait = self.target.keepalive_wait
        if not self.v.wants(STREAM_KEEPALIVE):
            return
        if wait <= 0:
            return self.v.record(STREAM_KEEPALIVE, "skip", "--keepalive-wait 0")
        conn = self.connection()
        try:
            init = await conn.initialize("acp-check-keepalive")
            if conn.id is None:
                why = _status(init, conn)
                return self.v.record(STREAM_KEEPALIVE, "skip", f"initialize: {why}")
            self.reach.connection_ids.append(conn.id)
            response, stream = await conn.open_stream()
            if stream is None:
                return self.v.record(STREAM_KEEPALIVE, "skip", f"GET: {_status(response, conn)}")
            await self._judge_keepalive(stream, wait)
        finally:
            await conn.close()

    async def _judge_keepalive(self, stream: SseStream, wait: float) -> None:
        """Pass at the first line sent on the server's own initiative (after the opening);
        fail at the first silence longer than ``wait``."""
        while True:
            count = len(stream.line_times)
            last = stream.line_times[-1] if count else stream.opened_at
            remaining = last + wait - time.monotonic()
            if not await stream.wait_line(count, max(remaining, 0.0)):
                break
            if stream.line_times[-1] - stream.opened_at >= QUIET_START:
                return self.v.record(STREAM_KEEPALIVE, "pass")
        if stream.ended.is_set():
            return self.v.fail(STREAM_KEEPALIVE, "the idle stream ended")
        self.v.fail(STREAM_KEEPALIVE, f"the idle stream sent nothing for {wait:g} s")

    # -- HTTP/2 ------------------------------------------------------------------------

    async def http2(self) -> None:
        if not self.v.wants(HTTP2):
            return
        if self.target.tls:
            chosen, problem = await alpn_protocol(self.target, self.options.quick)
            if problem is not None:
                return self.v.record(HTTP2, "skip", problem)
            if chosen != "h2":
                picked = chosen or "neither (no ALPN: HTTP/1.1)"
                return self.v.fail(
                    HTTP2, f"TLS ALPN offered h2 and http/1.1; the server chose {picked}"
                )
        else:
            problem = await h2c_answer(self.target, self.options.quick)
            if problem is not None:
                return self.v.fail(HTTP2, f"no h2c with prior knowledge: {problem}")
        if importlib.util.find_spec("h2") is None:
            return self.v.record(
                HTTP2, "pass", "HTTP/2 handshake (install h2 to also run initialize over HTTP/2)"
            )
        conn = self.connection(http2=True)
        try:
            init = await conn.initialize("acp-check-h2")
            version = init.http_version if init is not None else None
            if init is None or init.status_code != 200 or version != "HTTP/2":
                return self.v.fail(
                    HTTP2, f"initialize over HTTP/2: {_status(init, conn)} ({version})"
                )
            if conn.id is not None:
                self.reach.connection_ids.append(conn.id)
            self.v.record(HTTP2, "pass", "initialize answered over HTTP/2")
        finally:
            await conn.close()


def _lasting(set_cookie: str) -> bool:
    """A Set-Cookie that stores a cookie (not one that deletes it with Max-Age=0)."""
    for attribute in set_cookie.split(";")[1:]:
        name, _, value = attribute.strip().partition("=")
        if name.lower() == "max-age" and value.strip().lstrip("-").isdigit():
            return int(value) > 0
    return True


def _reason(response: httpx.Response) -> object:
    """The ``reason`` of a refusal's JSON body (the durable draft's 409), if any."""
    try:
        body = msgspec.json.decode(response.content)
    except (msgspec.DecodeError, RuntimeError):  # not JSON, or not read
        return None
    return body.get("reason") if isinstance(body, dict) else None


def _is_ours(event: SseEvent) -> bool:
    """A JSON-RPC message of the stream, not one of the draft's transport frames
    (``stream/resumed``, which carry no cursor)."""
    m = event.message
    return m is not None and not str(m.get("method", "")).startswith("stream/")
