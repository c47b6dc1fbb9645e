#!/usr/bin/env python3
"""Interop peer AGENT on acpwire's low tier with unstable ACP opted in.

    .venv/bin/python tests/interop/peers/acpwire_unstable_agent.py [--wire-log FILE]

The acpwire twin of ``ts_unstable_agent.mjs`` (same capabilities, same in-memory
sessions and providers, same prompt commands), so either SDK's client can be run
against either agent:

* ``mcp NAME METHOD JSON``: one MCP request to the session's ACP MCP server NAME
  through ``ClientPeer.mcp_message`` (the MCP 2026-07-28 ``_meta`` envelope added
  here); the turn sends ``{"outcome": ..., "notes": [...]}`` as a message.
* ``tool NAME TOOL JSON``: the same server through :class:`McpServers` (the ``mcp``
  SDK's ClientSession over ACP): ``{"tools": [...], "text": ..., "isError": ...}``.
* ``auth STATE``: ``auth/status_update``; ``echo TEXT``: a message.

``--wire-log`` appends every message of both directions to FILE (JSON lines).
``--stable`` runs the same agent without opting in to unstable ACP: its unstable
methods then answer ``-32601`` and commands that need unstable ACP report
``{"refused": ...}``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import sys
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _acpwire_wire import RecordingTransport

from acpwire import schema as s
from acpwire.agent.connection import Agent, AgentSideConnection
from acpwire.agent.mcp import McpServers
from acpwire.protocol.errors import LocalProtocolError, RequestError, ResourceNotFound
from acpwire.protocol.mcp_binding import (
    MCP_PROTOCOL_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
)
from acpwire.transports.stdio import stdio_transport

CAPABILITIES = s.AgentCapabilities(
    mcp_capabilities=s.McpCapabilities(acp=True),
    session_capabilities=s.SessionCapabilities(
        fork=s.SessionForkCapabilities(),
        archive=s.SessionArchiveCapabilities(),
        status=s.SessionStatusCapabilities(),
        title=s.SessionTitleCapabilities(),
    ),
    auth=s.AgentAuthCapabilities(status=s.AuthStatusCapabilities()),
    providers=s.ProvidersCapabilities(),
)
INFO = {"name": "acpwire-unstable-agent", "version": "0"}


@dataclass
class Session:
    cwd: str
    mcp_servers: list[s.McpServer]
    title: str | None = None
    archived: bool = False
    forked_from: str | None = None
    history: list[str] = field(default_factory=list[str])


class UnstablePeerAgent(Agent):
    unstable = True

    def __init__(self) -> None:
        self.sessions: dict[str, Session] = {}
        self.providers: dict[str, s.ProviderInfo] = {
            "main": s.ProviderInfo(provider_id="main", supported=["anthropic"], required=False)
        }

    def session(self, session_id: str) -> Session:
        found = self.sessions.get(session_id)
        if found is None:
            raise ResourceNotFound(f"Resource not found: {session_id}", {"sessionId": session_id})
        return found

    def add(self, cwd: str, servers: list[s.McpServer], forked_from: str | None = None) -> str:
        session_id = f"py-{len(self.sessions) + 1}"
        self.sessions[session_id] = Session(cwd, servers, forked_from=forked_from)
        return session_id

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        return s.InitializeResponse(
            protocol_version=1,
            agent_capabilities=CAPABILITIES,
            agent_info=s.Implementation(name=INFO["name"], version=INFO["version"]),
        )

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        return s.NewSessionResponse(session_id=self.add(params.cwd, list(params.mcp_servers)))

    async def fork_session(self, params: s.ForkSessionRequest) -> s.ForkSessionResponse:
        parent = self.session(params.session_id)
        servers = [] if params.mcp_servers is s.UNSET else list(params.mcp_servers)
        child = self.add(params.cwd, servers, forked_from=params.session_id)
        self.sessions[child].title = parent.title
        self.sessions[child].history = list(parent.history)
        return s.ForkSessionResponse(session_id=child)

    async def archive_session(self, params: s.ArchiveSessionRequest) -> s.ArchiveSessionResponse:
        self.session(params.session_id).archived = True
        return s.ArchiveSessionResponse()

    async def unarchive_session(
        self, params: s.UnarchiveSessionRequest
    ) -> s.UnarchiveSessionResponse:
        self.session(params.session_id).archived = False
        return s.UnarchiveSessionResponse()

    async def session_status(self, params: s.SessionStatusRequest) -> s.SessionStatusResponse:
        return s.SessionStatusResponse(
            status="saved" if self.session(params.session_id).archived else "open"
        )

    async def set_session_title(
        self, params: s.SetSessionTitleRequest
    ) -> s.SetSessionTitleResponse:
        title = params.title.strip()
        self.session(params.session_id).title = title
        return s.SetSessionTitleResponse(title=title)

    async def list_providers(self, params: s.ListProvidersRequest) -> s.ListProvidersResponse:
        return s.ListProvidersResponse(providers=list(self.providers.values()))

    async def set_provider(self, params: s.SetProviderRequest) -> s.SetProviderResponse:
        self.providers[params.provider_id] = s.ProviderInfo(
            provider_id=params.provider_id,
            supported=[params.api_type],
            required=False,
            current=s.ProviderCurrentConfig(api_type=params.api_type, base_url=params.base_url),
        )
        return s.SetProviderResponse()

    async def disable_provider(self, params: s.DisableProviderRequest) -> s.DisableProviderResponse:
        self.providers.pop(params.provider_id, None)
        return s.DisableProviderResponse()

    async def auth_status(self, params: s.AuthStatusRequest) -> s.AuthStatusResponse:
        return s.AuthStatusResponse(
            state="authenticated", accounts=[s.AuthAccount(label="py", active=True)]
        )

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        session = self.session(params.session_id)
        text = "\n".join(b.text for b in params.prompt if isinstance(b, s.TextContent))
        for line in filter(None, (raw.strip() for raw in text.split("\n"))):
            session.history.append(line)
            try:
                await self.command(params.session_id, session, line)
            except LocalProtocolError as exc:  # not opted in, or a capability not advertised
                await self.say(params.session_id, json.dumps({"refused": str(exc)}))
        return s.PromptResponse(stop_reason="end_turn")

    async def command(self, session_id: str, session: Session, line: str) -> None:
        name, _, rest = line.partition(" ")
        if name == "auth":
            await self.client.auth_status_update(rest)
            return
        if name == "echo":
            await self.say(session_id, rest)
            return
        if name in ("mcp", "tool"):
            server_name, what, body = [*rest.split(" ", 2), "", ""][:3]
            arguments = json.loads(body or "{}")
            servers = [
                x
                for x in session.mcp_servers
                if isinstance(x, s.McpServerAcp) and x.name == server_name
            ]
            if not servers:
                await self.say(session_id, json.dumps({"error": f"no ACP server {server_name}"}))
            elif name == "mcp":
                await self.say(session_id, json.dumps(await self.raw(servers[0], what, arguments)))
            else:
                await self.say(session_id, json.dumps(await self.tool(servers[0], what, arguments)))
            return
        await self.say(session_id, f"unknown command: {line}")

    async def raw(self, server: s.McpServerAcp, method: str, params: dict[str, Any]) -> Any:
        meta = dict(params.get("_meta") or {})
        meta.setdefault(META_PROTOCOL_VERSION, MCP_PROTOCOL_VERSION)
        meta.setdefault(META_CLIENT_CAPABILITIES, {})
        meta.setdefault(META_CLIENT_INFO, INFO)
        notes: list[Any] = []

        async def listener(note: s.MessageMcpNotification) -> None:
            notes.append(s.to_json(note))

        try:
            answer = await self.client.mcp_message(
                server.server_id, method, {**params, "_meta": meta}, on_notification=listener
            )
        except RequestError as exc:
            return {"acpError": exc.to_wire()}
        return {"outcome": s.to_json(answer), "notes": notes}

    async def tool(self, server: s.McpServerAcp, tool: str, arguments: dict[str, Any]) -> Any:
        async with McpServers(
            [server], client=self.client, capabilities=CAPABILITIES, client_name=INFO["name"]
        ) as mcp:
            if server.name in mcp.failures:
                return {"failure": mcp.failures[server.name]}
            result = await mcp.call_tool(server.name, tool, arguments)
            return {
                "tools": [t.name for t in mcp.tools(server.name)],
                "text": result.text,
                "isError": result.is_error,
            }

    async def say(self, session_id: str, text: str) -> None:
        await self.client.session_update(
            session_id, s.AgentMessageChunk(content=s.TextContent(text=text))
        )


async def amain(wire_log: str | None, stable: bool) -> None:
    transport = RecordingTransport(await stdio_transport(), wire_log)
    agent = UnstablePeerAgent()
    agent.unstable = not stable
    await AgentSideConnection(agent, transport).serve()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--wire-log", help="append both directions of the wire to this JSON-lines file"
    )
    parser.add_argument("--stable", action="store_true", help="do not opt in to unstable ACP")
    opts = parser.parse_args()
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="[acpwire_unstable_agent] %(message)s"
    )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(amain(opts.wire_log, opts.stable))


if __name__ == "__main__":
    main()
