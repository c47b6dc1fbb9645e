"""An agent factory for the endpoint that remembers every agent it made."""

from __future__ import annotations

from engine.agent_program import EngineTestAgent


class Agents:
    """``asgi_app(Agents(), ...)``: ``made`` lists the agents, in order, one per connection."""

    def __init__(self) -> None:
        self.made: list[EngineTestAgent] = []

    def __call__(self) -> EngineTestAgent:
        agent = EngineTestAgent()
        self.made.append(agent)
        return agent
