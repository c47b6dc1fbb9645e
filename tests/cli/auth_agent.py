"""An agent that needs authentication before session/new (-32000), for the `acp chat` tests.

It advertises an agent method ``token`` and, to clients that support it, a terminal
method ``login`` (relaunch with ``--login``). ``authenticate token`` unlocks it.
"""

from __future__ import annotations

import sys

from acpwire import schema as s
from acpwire.agent.connection import Agent, run_agent
from acpwire.protocol.errors import AuthRequired
from acpwire.protocol.version import negotiate


class AuthAgent(Agent):
    def __init__(self) -> None:
        self.authenticated = False

    async def initialize(self, params: s.InitializeRequest) -> s.InitializeResponse:
        methods: list[s.AuthMethod] = [
            s.AuthMethodAgent(id="token", name="API token", description="uses $TOKEN")
        ]
        auth = params.client_capabilities.auth if params.client_capabilities else None
        if isinstance(auth, s.AuthCapabilities) and auth.terminal is True:
            # AUTH-002: terminal methods only for clients that said they can run them.
            methods.append(s.AuthMethodTerminal(id="login", name="Log in", args=["--login"]))
        return s.InitializeResponse(
            protocol_version=negotiate(params.protocol_version),
            agent_capabilities=s.AgentCapabilities(),
            auth_methods=methods,
        )

    async def authenticate(self, params: s.AuthenticateRequest) -> s.AuthenticateResponse:
        self.authenticated = params.method_id == "token"
        return s.AuthenticateResponse()

    async def new_session(self, params: s.NewSessionRequest) -> s.NewSessionResponse:
        if not self.authenticated:
            raise AuthRequired("log in first")
        return s.NewSessionResponse(session_id="sess_auth")

    async def prompt(self, params: s.PromptRequest) -> s.PromptResponse:
        return s.PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    if "--login" in sys.argv:
        print("logged in")
        sys.exit(0)
    run_agent(AuthAgent())
