"""A small agent used by the engine behaviour suite, in-process or as a real subprocess.

Prompt commands: ``stream N``, ``slow``, ``ask``, ``boom``, ``print``, ``read PATH``,
``echo TEXT``. Anything else ends the turn at once.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from acpwire import schema as s
from acpwire.agent.connection import Agent, run_agent
from acpwire.protocol.errors import ResourceNotFound
from acpwire.protocol.version import negotiate


class EngineTestAgent(Agent):
    def __init__(self) -> None:
        self.turns: dict[str, asyncio.Task[Any]] = {}
        self.cancelled_handlers = 0
        self.sessions: set[str] = set()

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(
            protocol_version=negotiate(params.protocol_version),
            agent_capabilities=s.AgentCapabilities(load_session=False),
            agent_info=s.Implementation(name="engine-test-agent", version="1"),
        )

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        sid = f"s{len(self.sessions) + 1}"
        self.sessions.add(sid)
        return s.NewSessionResponse(session_id=sid)

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        if params.session_id not in self.sessions:
            raise ResourceNotFound(f"unknown session {params.session_id}")
        text = "".join(b.text for b in params.prompt if isinstance(b, s.TextContent))
        command, _, arg = text.partition(" ")
        sid = params.session_id
        self.turns[sid] = asyncio.current_task()  # type: ignore[assignment]
        try:
            if command == "stream":
                for i in range(int(arg)):
                    await self.client.session_update(
                        sid, s.AgentMessageChunk(content=s.TextContent(text=f"chunk {i}"))
                    )
            elif command == "echo":
                await self.client.session_update(
                    sid, s.AgentMessageChunk(content=s.TextContent(text=arg), meta=params.meta)
                )
            elif command == "slow":
                await asyncio.sleep(60)  # a turn that lasts until it is cancelled
            elif command == "ask":
                answer = await self.client.request_permission(
                    sid,
                    s.ToolCallUpdate(tool_call_id="t1", title="do it"),
                    [s.PermissionOption(option_id="yes", name="Yes", kind="allow_once")],
                )
                outcome = answer.outcome
                label = (
                    outcome.option_id
                    if isinstance(outcome, s.SelectedPermissionOutcome)
                    else "cancelled"
                )
                await self.client.session_update(
                    sid, s.AgentMessageChunk(content=s.TextContent(text=label))
                )
            elif command == "boom":
                raise RuntimeError("secret internal detail")
            elif command == "print":
                print("stray output that must not reach the protocol stream")
                await self.client.session_update(
                    sid, s.AgentMessageChunk(content=s.TextContent(text="printed"))
                )
            elif command == "read":
                result = await self.client.read_text_file(sid, arg)
                await self.client.session_update(
                    sid, s.AgentMessageChunk(content=s.TextContent(text=result.content))
                )
        except asyncio.CancelledError:
            self.cancelled_handlers += 1
            return s.PromptResponse(stop_reason="cancelled")
        finally:
            self.turns.pop(sid, None)
        return s.PromptResponse(stop_reason="end_turn")

    async def cancel(self, params: s.CancelNotification) -> None:
        task = self.turns.get(params.session_id)
        if task is not None:
            task.cancel()

    async def ext_method(self, method: str, params: Any) -> Any:
        if method == "_test/echo":
            return {"echo": params}
        if method == "_test/sleep":
            await asyncio.sleep(60)  # a request that lasts until it is cancelled
        if method == "_test/stop_when_asked":  # takes its $/cancel_request over
            asked = asyncio.Event()
            self.client.connection.take_cancellation(asked.set)
            await self.client.ext_notification("_test/listening", {})
            await asked.wait()
            return {"stopped": "in good order"}
        if method == "_test/cancelled_count":
            return {"count": self.cancelled_handlers}
        return await super().ext_method(method, params)

    async def ext_notification(self, method: str, params: Any) -> None:
        if method == "_test/note":
            await self.client.ext_notification("_test/noted", params)


if __name__ == "__main__":
    run_agent(EngineTestAgent)
