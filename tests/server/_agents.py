"""An agent factory for the endpoint that remembers every agent it made."""

from __future__ import annotations

import asyncio

from engine.agent_program import EngineTestAgent

from acpwire import schema as s


class Agents:
    """``asgi_app(Agents(), ...)``: ``made`` lists the agents, in order, one per connection."""

    def __init__(self) -> None:
        self.made: list[EngineTestAgent] = []

    def __call__(self) -> EngineTestAgent:
        agent = EngineTestAgent()
        self.made.append(agent)
        return agent


class DripAgent(EngineTestAgent):
    """``drip N``: N chunks ``d0``..., a little apart, asking permission half way."""

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        text = "".join(b.text for b in params.prompt if isinstance(b, s.TextContent))
        command, _, arg = text.partition(" ")
        if command != "drip":
            return await super().prompt(params)
        sid = params.session_id
        count = int(arg)
        for i in range(count):
            if i == count // 2:
                await self.client.request_permission(
                    sid,
                    s.ToolCallUpdate(tool_call_id="t1", title="go on"),
                    [s.PermissionOption(option_id="yes", name="Yes", kind="allow_once")],
                )
            await self.client.session_update(
                sid, s.AgentMessageChunk(content=s.TextContent(text=f"d{i}"))
            )
            await asyncio.sleep(0.005)
        return s.PromptResponse(stop_reason="end_turn")


class DripAgents:
    """An agent factory of :class:`DripAgent`."""

    def __init__(self) -> None:
        self.made: list[DripAgent] = []

    def __call__(self) -> DripAgent:
        agent = DripAgent()
        self.made.append(agent)
        return agent


class LoadingAgent(EngineTestAgent):
    """Sessions kept in ``shelf`` (shared by every instance), reopened by ``session/load``
    with a replay of their messages; no ``session/resume``."""

    def __init__(self, shelf: dict[str, list[str]]) -> None:
        super().__init__()
        self.shelf = shelf

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        answer = await super().initialize(params)
        answer.agent_capabilities = s.AgentCapabilities(load_session=True)
        return answer

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        sid = f"kept-{len(self.shelf) + 1}"
        self.shelf[sid] = []
        self.sessions.add(sid)
        return s.NewSessionResponse(session_id=sid)

    async def load_session(self, params: s.LoadSessionRequest) -> s.LoadSessionResponse:
        sid = params.session_id
        for text in self.shelf[sid]:
            await self.client.session_update(
                sid, s.AgentMessageChunk(content=s.TextContent(text=text))
            )
        self.sessions.add(sid)
        return s.LoadSessionResponse()

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        text = "".join(b.text for b in params.prompt if isinstance(b, s.TextContent))
        command, _, arg = text.partition(" ")
        if command == "stream":
            self.shelf[params.session_id] += [f"chunk {i}" for i in range(int(arg))]
        return await super().prompt(params)
