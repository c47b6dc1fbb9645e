"""acpwire benchmark agent: the low-tier :class:`acpwire.agent.connection.Agent`
served on stdio with :func:`run_agent`, written the way an application would.

Prompt ``stream N`` sends N ``agent_message_chunk`` updates (64 bytes of text each,
a new model per update) before answering ``end_turn``; any other prompt answers
``end_turn`` at once.
"""

from __future__ import annotations

from acpwire import schema as s
from acpwire.agent.connection import Agent, run_agent

TEXT64 = "acp-bench " * 6 + "data"  # same as _scenario.TEXT64


class BenchAgent(Agent):
    def __init__(self) -> None:
        self.sessions = 0

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        self.sessions += 1
        return s.NewSessionResponse(session_id=f"acpwire-{self.sessions}")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        block = params.prompt[0]
        text = block.text if isinstance(block, s.TextContent) else ""
        if text.startswith("stream "):
            send = self.client.session_update
            sid = params.session_id
            for _ in range(int(text[7:])):
                await send(sid, s.AgentMessageChunk(content=s.TextContent(text=TEXT64)))
        return s.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    run_agent(BenchAgent)
