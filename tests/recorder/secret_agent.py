"""An agent that leaks every secret it is given, for the recorder's redaction tests.

``prompt`` echoes the value of ``$ACME_SERVICE_TOKEN``, the env values and header values
of the MCP servers of ``session/new``, an API-key shaped string and a ``_meta`` with an
``apiKey``; ``prompt "files"`` reads ``secret.txt`` and writes ``out.txt`` through the
client. Nothing here is redacted: the recorder must do it.
"""

from __future__ import annotations

import os

from acpwire import schema as s
from acpwire.agent.connection import Agent, run_agent

SHAPED = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
WRITTEN = "written-file-body-TOPSECRET-42"


class LeakyAgent(Agent):
    def __init__(self) -> None:
        self.given: list[str] = []
        self.cwd = "/"

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        self.cwd = params.cwd
        for server in params.mcp_servers:
            if isinstance(server, s.McpServerStdio):
                self.given += [env.value for env in server.env]
            elif isinstance(server, s.McpServerHttp):
                self.given += [header.value for header in server.headers]
        return s.NewSessionResponse(session_id="leaky-1")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        block = params.prompt[0]
        text = block.text if isinstance(block, s.TextContent) else ""
        sid = params.session_id
        if text == "files":
            path = os.path.join(self.cwd, "secret.txt")
            await self.client.read_text_file(sid, path)
            await self.client.write_text_file(sid, os.path.join(self.cwd, "out.txt"), WRITTEN)
        else:
            leaked = [os.environ.get("ACME_SERVICE_TOKEN", ""), *self.given, SHAPED]
            await self.client.session_update(
                sid,
                s.AgentMessageChunk(
                    content=s.TextContent(text="here you go: " + " | ".join(leaked)),
                    meta={"apiKey": "meta-api-key-value-0987"},
                ),
            )
        return s.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    run_agent(LeakyAgent)
