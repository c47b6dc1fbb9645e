"""Admission of client messages (docs/security.md, "One reading of every client message").

Behind the endpoint: tests/server/lenient_agent.py over stdio (what ``acp serve --
AGENT`` hosts), an agent that reads what the endpoint refuses (``NaN``, ``Infinity``,
``1e400``, lone surrogates, batches, ``\\r`` as a line end, the first of two members
with one name) and keeps its sessions on disk for every connection. Two principals;
each client lane is a real socket on 127.0.0.1: HTTP/1.1, HTTP/2 (h2c) and WebSocket,
whose frames the front offers the endpoint's direct path first.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest
from waiting import TIMEOUT

from acpwire.protocol.errors import ErrorCode
from acpwire.server import ServedApp, StdioBridge, asgi_app, serve_in_background
from acpwire.server.admission import MAX_DEPTH, Unreadable, read_client_message
from acpwire.server.front import WebSocket
from acpwire.testing import SchemaValidator
from acpwire.transports.base import Transport

from ._lanes import LANES, HttpLane, lane

AGENT = Path(__file__).with_name("lenient_agent.py")
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef"
SECRET = "the launch code is 0000"
PARSE, INVALID, PARAMS = ErrorCode.PARSE_ERROR, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_PARAMS


@dataclass
class Endpoint:
    served: ServedApp
    state: Path

    def prompts_of(self, session_id: str) -> list[str]:
        """What the agent has on disk for ``session_id``."""
        kept = json.loads((self.state / "sessions" / f"{session_id}.json").read_text())
        prompts: list[str] = kept["prompts"]
        return prompts

    def logs(self) -> list[Path]:
        """One file per agent process: what it read."""
        return sorted(self.state.glob("received-*.jsonl"))

    def received(self, log: Path | None = None) -> list[str]:
        """Every line an agent process read (all of them by default), in order."""
        logs = self.logs() if log is None else [log]
        return [json.loads(line) for path in logs for line in path.read_text().splitlines()]


class Bridge(StdioBridge):
    """``acp serve -- lenient_agent.py``'s bridge, counting the agents still running."""

    def __init__(self, state: Path) -> None:
        super().__init__(sys.executable, [str(AGENT), str(state)])
        self.running = 0
        self.all_stopped = asyncio.Event()

    async def serve(self, transport: Transport) -> None:
        self.running += 1
        self.all_stopped.clear()
        try:
            await super().serve(transport)
        finally:
            self.running -= 1
            if not self.running:
                self.all_stopped.set()


@pytest.fixture
async def endpoint(tmp_path: Path) -> AsyncIterator[Endpoint]:
    bridge = Bridge(tmp_path)
    app = asgi_app(bridge, auth={ALICE: "alice", BOB: "bob"})
    async with serve_in_background(app) as served:
        yield Endpoint(served, tmp_path)
        # A closed WebSocket's agent may still be stopping: the server does not wait for it.
        await app.aclose()
        if bridge.running:
            await asyncio.wait_for(bridge.all_stopped.wait(), TIMEOUT)


@pytest.fixture
def direct_path(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Every frame the front offered the endpoint's direct path, and whether it took it."""
    offered: list[tuple[str, bool]] = []
    deliver_to = WebSocket.deliver_to

    def recording(self: WebSocket, sink: Callable[[bytes], bool] | None) -> None:
        if sink is None:
            deliver_to(self, None)
            return
        taking = sink

        def record(data: bytes) -> bool:
            taken = taking(data)
            offered.append((data.decode(), taken))
            return taken

        deliver_to(self, record)

    monkeypatch.setattr(WebSocket, "deliver_to", recording)
    return offered


async def alices_secret(served: ServedApp) -> str:
    """Alice's session, holding :data:`SECRET`, on the agent's disk."""
    async with lane("websocket", served, ALICE) as alice:
        new = await alice.call("session/new", {"cwd": "/", "mcpServers": []})
        sid: str = new["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": SECRET}]}
        assert (await alice.call("session/prompt", prompt))["result"]["stopReason"] == "end_turn"
    return sid


def request(method: str, params: dict[str, Any], rid: int = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def with_meta(message: dict[str, Any], raw_value: str) -> bytes:
    """``message`` with ``params._meta.x`` written as ``raw_value`` (any text, valid or not)."""
    params = {**message["params"], "_meta": {"x": "@@"}}
    return json.dumps({**message, "params": params}).replace('"@@"', raw_value).encode()


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def hostile_bodies(target: dict[str, Any]) -> dict[str, tuple[bytes, int]]:
    """Bodies built around the request ``target`` that no lane may read, with the JSON-RPC
    error each gets."""
    plain = json.dumps(target)
    return {
        "NaN": (with_meta(target, "NaN"), PARSE),
        "Infinity": (with_meta(target, "Infinity"), PARSE),
        "-Infinity": (with_meta(target, "-Infinity"), PARSE),
        "1e400": (with_meta(target, "1e400"), PARSE),
        "-1e400": (with_meta(target, "-1e400"), PARSE),
        "lone high surrogate": (with_meta(target, '"\\ud800"'), PARSE),
        "lone low surrogate": (with_meta(target, '"\\udc00"'), PARSE),
        "surrogate then letter": (with_meta(target, '"\\ud800A"'), PARSE),
        "100,000 deep": (with_meta(target, nested(100_000)), PARSE),
        f"{MAX_DEPTH + 1} deep": (with_meta(target, nested(MAX_DEPTH - 2)), PARSE),
        "trailing garbage": ((plain + " garbage").encode(), PARSE),
        "two messages in one": ((plain + plain).encode(), PARSE),
        "truncated": (plain[:-1].encode(), PARSE),
        "single quotes": (plain.replace('"', "'").encode(), PARSE),
        "a string": (b'"session/list"', INVALID),
        "a number": (b"42", INVALID),
        "null": (b"null", INVALID),
        "a batch": (json.dumps([target]).encode(), INVALID),
        "an empty batch": (b"[]", INVALID),
        "jsonrpc 1.0": (json.dumps({**target, "jsonrpc": "1.0"}).encode(), INVALID),
        "no jsonrpc": (
            json.dumps({k: v for k, v in target.items() if k != "jsonrpc"}).encode(),
            INVALID,
        ),
        "id true": (json.dumps({**target, "id": True}).encode(), INVALID),
        "id 1.5": (json.dumps({**target, "id": 1.5}).encode(), INVALID),
        "id null": (json.dumps({**target, "id": None}).encode(), INVALID),
        "id 2**64": (json.dumps({**target, "id": 2**64}).encode(), INVALID),
        "method 5": (json.dumps({**target, "method": 5}).encode(), INVALID),
        "sessionId a list": (
            json.dumps({**target, "params": {**target["params"], "sessionId": ["x"]}}).encode(),
            PARAMS,
        ),
        "neither request nor answer": (b'{"jsonrpc":"2.0","id":7}', INVALID),
    }


@pytest.mark.slow
async def test_hostile_bodies_get_one_verdict_on_every_lane_and_never_reach_the_agent(
    endpoint: Endpoint,
    direct_path: list[tuple[str, bool]],
    schema_validator: SchemaValidator,
) -> None:
    sid = await alices_secret(endpoint.served)
    target = request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "?"}]}
    )
    bodies = hostile_bodies(target)
    verdicts: dict[str, dict[str, tuple[int, object]]] = {}
    for kind in LANES:
        async with lane(kind, endpoint.served, BOB) as bob:
            verdicts[kind] = {}
            for name, (body, _) in bodies.items():
                refusal = await bob.send(body)
                assert refusal is not None, f"{kind} took {name}"
                schema_validator.validate(refusal)
                verdicts[kind][name] = (refusal["error"]["code"], refusal["id"])
            if isinstance(bob, HttpLane):
                batch = list(bodies).index("a batch")
                expected = [501 if i in (batch, batch + 1) else 400 for i in range(len(bodies))]
                assert bob.statuses == expected
            # The connection goes on (no 1011, no broken stream), and sees only its own.
            listed = await bob.call("session/list", {})
            assert listed["result"]["sessions"] == []
            assert SECRET not in json.dumps(bob.received)
    expected_codes = {name: code for name, (_, code) in bodies.items()}
    for kind in LANES:
        assert {name: code for name, (code, _) in verdicts[kind].items()} == expected_codes, kind
        assert verdicts[kind] == verdicts["websocket"], kind
    # The WebSocket's frames were offered to the direct path first; it took none of them.
    hostile = {body.decode() for body, _ in bodies.values()}
    refused_there = [text for text, taken in direct_path if text in hostile]
    assert sorted(refused_there) == sorted(hostile)
    assert not any(taken for text, taken in direct_path if text in hostile)
    # What the agents read: only well-formed messages, exactly as the endpoint encodes them.
    lines = endpoint.received()
    assert lines and all(line.endswith("\n") and line.count("\n") == 1 for line in lines)
    for line in lines:
        assert msgspec.json.encode(msgspec.json.decode(line)).decode() == line[:-1]
    methods = sorted(
        [json.loads(line)["method"] for line in endpoint.received(path)] for path in endpoint.logs()
    )
    alices = ["initialize", "session/new", "session/prompt"]
    assert methods == sorted([alices] + [["initialize", "session/list"]] * len(LANES))
    assert endpoint.prompts_of(sid) == [SECRET]


def tricks(message: dict[str, Any], own: str) -> list[tuple[bytes, str | None]]:
    """``message`` (naming Alice's session, or none) dressed up every way that reached the
    agent unchecked before: (body, the session an HTTP client names in its header)."""
    params = message["params"]
    sid = params.get("sessionId")
    bodies: list[tuple[bytes, str | None]] = [
        (with_meta(message, "NaN"), sid),
        (with_meta(message, "Infinity"), sid),
        (with_meta(message, "1e400"), sid),
        (with_meta(message, '"\\ud800"'), sid),
        (json.dumps([message]).encode(), sid),
        (json.dumps([message, request("session/list", {}, 8)]).encode(), sid),
    ]
    if sid is not None:
        # The agent keeps the first sessionId (Alice's); the endpoint, the last (Bob's own).
        twice = {**message, "params": {**params, "@@": own}}
        bodies.append((json.dumps(twice).replace('"@@"', '"sessionId"').encode(), own))
    else:
        # The agent keeps the first method (session/list); the endpoint, the last.
        twice = {**message, "@@": "_x/other"}
        bodies.append((json.dumps(twice).replace('"@@"', '"method"').encode(), None))
    # A stdio agent reads a line at a time: raw line ends between tokens are legal JSON.
    for end in ("\n", "\r"):
        outer = {"jsonrpc": "2.0", "method": "_x/note", "params": {"pad": "@@"}}
        smuggled = json.dumps(outer).replace('"@@"', end + json.dumps({**message, "id": 99}) + end)
        bodies.append((smuggled.encode(), None))
    return bodies


@pytest.mark.parametrize("kind", LANES)
async def test_another_principal_cannot_list_load_or_prompt_a_session_by_any_trick(
    endpoint: Endpoint, direct_path: list[tuple[str, bool]], kind: str
) -> None:
    """The audit's attack: Bob lists, loads and prompts Alice's session with frames the
    endpoint could not parse (or read otherwise than the agent), on every lane."""
    sid = await alices_secret(endpoint.served)
    async with lane(kind, endpoint.served, BOB) as bob:
        new = await bob.call("session/new", {"cwd": "/", "mcpServers": []})
        own = new["result"]["sessionId"]
        attacks = [
            request("session/list", {}),
            request("session/load", {"sessionId": sid, "cwd": "/", "mcpServers": []}),
            request(
                "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
            ),
        ]
        for message in attacks:
            for body, session in tricks(message, own):
                await bob.send(body, session)
        # Everything Bob sent has been served once this answer is back (one agent, in order).
        listed = await bob.call("session/list", {})
        assert [info["sessionId"] for info in listed["result"]["sessions"]] == [own]
        seen = json.dumps(bob.received)
    assert SECRET not in seen
    assert sid not in seen
    assert endpoint.prompts_of(sid) == [SECRET]
    if kind == "websocket":
        assert direct_path, "the direct path was never offered a frame"


def test_the_depth_bound_is_exact_and_deeper_is_a_parse_error() -> None:
    # The message, its params and _meta are three levels: nested(n) makes it 3 + n deep.
    at_bound = with_meta(request("session/list", {}), nested(MAX_DEPTH - 3))
    assert read_client_message(at_bound).method == "session/list"
    for depth in (MAX_DEPTH - 2, 100_000):
        with pytest.raises(Unreadable) as refused:
            read_client_message(with_meta(request("session/list", {}), nested(depth)))
        assert refused.value.code == PARSE and refused.value.status == 400


class LeakyAgent:
    """An agent (on the endpoint's transport, in this process) whose every ``session/list``
    answer lists a session nobody on this connection owns twice over: once with an id
    no request has, once in an answer the endpoint cannot read (``1e400`` in it, which
    Python's ``json`` and JavaScript read as infinity)."""

    async def serve(self, transport: Transport) -> None:
        while (line := await transport.receive()) is not None:
            assert isinstance(line, bytes)
            message = json.loads(line)
            rid, method = message.get("id"), message.get("method")
            if method == "initialize":
                result: dict[str, Any] = {"protocolVersion": 1, "agentCapabilities": {}}
                await transport.send(
                    json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
                )
            elif method == "session/list":
                listed = {
                    "sessions": [{"sessionId": "someone-elses", "cwd": "/", "_meta": {"x": 0}}]
                }
                stray = {"jsonrpc": "2.0", "id": "asked-by-nobody", "result": listed}
                await transport.send(json.dumps(stray).encode())
                answer = json.dumps({"jsonrpc": "2.0", "id": rid, "result": listed})
                await transport.send(answer.replace('"x": 0', '"x": 1e400').encode())


@pytest.mark.parametrize("kind", LANES)
async def test_a_session_list_answer_is_filtered_or_withheld_on_every_lane(kind: str) -> None:
    app = asgi_app(LeakyAgent(), auth={ALICE: "alice", BOB: "bob"})
    async with serve_in_background(app) as served, lane(kind, served, BOB) as bob:
        listed = await bob.call("session/list", {})
        assert listed["error"]["code"] == ErrorCode.INTERNAL_ERROR
        # The stray answer came before it, so it would have arrived by now.
        assert "someone-elses" not in json.dumps(bob.received)
