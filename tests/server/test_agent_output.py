"""What the agent sends on a remote connection goes to the client's stream from the
agent's own task (server/agent_side.py, ``AgentSide``): in order, and bounded when the
client stops reading."""

from __future__ import annotations

import asyncio
import json

from engine.agent_program import EngineTestAgent
from waiting import TIMEOUT, wait_until
from websockets.asyncio.client import connect

from acpwire import schema as s
from acpwire.server import Limits, asgi_app, serve_in_background

TOKEN = "agent-output-token-0123456789"
CHUNKS = 300
CHUNK_SIZE = 64 * 1024  # 300 x 64 KiB: far more than the socket buffers hold


class FloodAgent(EngineTestAgent):
    """A prompt is answered with :data:`CHUNKS` large chunks; ``sent`` counts those sent."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        for i in range(CHUNKS):
            text = f"{i}:" + "x" * CHUNK_SIZE
            await self.client.session_update(
                params.session_id, s.AgentMessageChunk(content=s.TextContent(text=text))
            )
            self.sent += 1
        return s.PromptResponse(stop_reason="end_turn")


async def test_an_agent_flooding_a_client_that_does_not_read_waits_and_loses_nothing() -> None:
    agents: list[FloodAgent] = []

    def make() -> FloodAgent:
        agents.append(FloodAgent())
        return agents[-1]

    limits = Limits(queue_messages=8)
    app = asgi_app(make, auth=[TOKEN], limits=limits)
    async with serve_in_background(app) as served:
        async with connect(
            served.ws_url,
            additional_headers={"Authorization": f"Bearer {TOKEN}"},
            max_size=None,
            compression=None,
        ) as ws:

            async def call(request_id: int, method: str, params: object) -> dict[str, object]:
                request = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
                await ws.send(json.dumps(request))
                answer: dict[str, object] = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                return answer

            await call(0, "initialize", {"protocolVersion": 1})
            opened = await call(1, "session/new", {"cwd": "/", "mcpServers": []})
            session_id = opened["result"]["sessionId"]  # type: ignore[index]
            prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                                      "params": prompt}))  # fmt: skip
            (conn,) = served.app.host.connections.values()

            # The client reads nothing: the socket's buffers fill, then the stream's queue.
            await wait_until(
                lambda: len(conn.stream.queue) >= limits.queue_messages, "the stream's queue fills"
            )
            assert agents[0].sent < CHUNKS  # the agent's sends wait; the server holds little

            received: list[int] = []
            while True:
                message = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
                if message.get("id") == 2:
                    assert message["result"] == {"stopReason": "end_turn"}
                    break
                text = message["params"]["update"]["content"]["text"]
                received.append(int(text.partition(":")[0]))
        assert received == list(range(CHUNKS))
        assert agents[0].sent == CHUNKS
