"""Benchmark agent on the official Python SDK (``agent-client-protocol==0.12.1``,
``import acp``), served with ``acp.run_agent``. Runs on the SDK's own virtual
environment (``.cache/pysdk-venv``), never on acpwire's.

Prompt ``stream N`` sends N ``agent_message_chunk`` updates (64 bytes of text
each) before answering ``end_turn``; any other prompt answers ``end_turn`` at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

from acp import PROTOCOL_VERSION, run_agent, update_agent_message_text
from acp import schema as S

TEXT64 = "acp-bench " * 6 + "data"  # same as _scenario.TEXT64


class BenchAgent:
    def __init__(self) -> None:
        self._conn: Any = None
        self.sessions = 0

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> S.InitializeResponse:
        return S.InitializeResponse(
            protocol_version=PROTOCOL_VERSION, agent_capabilities=S.AgentCapabilities()
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> S.NewSessionResponse:
        self.sessions += 1
        return S.NewSessionResponse(session_id=f"pysdk-{self.sessions}")

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> S.PromptResponse:
        text = getattr(prompt[0], "text", "") if prompt else ""
        if text.startswith("stream "):
            send = self._conn.session_update
            for _ in range(int(text[7:])):
                await send(session_id=session_id, update=update_agent_message_text(TEXT64))
        return S.PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        pass


if __name__ == "__main__":
    asyncio.run(run_agent(BenchAgent()))
