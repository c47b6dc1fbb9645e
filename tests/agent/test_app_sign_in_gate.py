"""The sign-in gate of an AgentApp, checked against the method table (AUTH-008).

Every client->agent method of the table (stable and unstable) is sent, as JSON on the
wire, by a client that has not signed in: all but ``NO_SIGN_IN`` answer ``-32000``
with the app's ``authMethods``; those answer something else. A method the table gains
without an example here fails the first test, so the gate is checked for it too."""

from __future__ import annotations

from typing import Any

import pytest
from _app_harness import Wired, wired

from acpwire import schema as s
from acpwire.agent.app import AgentApp, AgentAuth, Choice, Mode, Provider, Select, Turn
from acpwire.agent.runtime import NO_SIGN_IN, SERVED_IF, AppAgent
from acpwire.protocol.errors import AuthRequired, ErrorCode, RequestError
from acpwire.schema.methods import V1_UNSTABLE
from acpwire.testing import SchemaValidator

SID = "sess_someone_elses"
CWD = "/work/project"

REQUESTS: dict[str, dict[str, Any]] = {
    "initialize": {"protocolVersion": 1},
    "authenticate": {"methodId": "no-such-method"},
    "logout": {},
    "auth/status": {},
    "proxy/initialize": {"protocolVersion": 1},
    "proxy/successor": {"method": "session/new"},
    "session/new": {"cwd": CWD, "mcpServers": []},
    "session/load": {"sessionId": SID, "cwd": CWD, "mcpServers": []},
    "session/resume": {"sessionId": SID, "cwd": CWD},
    "session/fork": {"sessionId": SID, "cwd": CWD},
    "session/list": {},
    "session/close": {"sessionId": SID},
    "session/delete": {"sessionId": SID},
    "session/prompt": {"sessionId": SID, "prompt": [{"type": "text", "text": "hi"}]},
    "session/set_mode": {"sessionId": SID, "modeId": "code"},
    "session/set_config_option": {"sessionId": SID, "configId": "model", "value": "smart"},
    "session/archive": {"sessionId": SID},
    "session/unarchive": {"sessionId": SID},
    "session/status": {"sessionId": SID},
    "session/set_title": {"sessionId": SID, "title": "mine now"},
    "providers/list": {},
    "providers/set": {"providerId": "main", "apiType": "openai", "baseUrl": "https://x.example"},
    "providers/disable": {"providerId": "main"},
}
"""Valid params for every request the agent serves (the gate must be reached, not -32602)."""


def full_app(**options: Any) -> AgentApp:
    """An app that serves every method of the table, so none is refused as unserved."""
    app = AgentApp(
        "gated",
        store="memory:",
        unstable=True,
        modes=[Mode("ask", "Ask"), Mode("code", "Code")],
        options=[Select("model", "Model", [Choice("fast", "Fast"), Choice("smart", "Smart")])],
        providers=[Provider("main", ["openai"])],
        auth_methods=[AgentAuth("api-key", "API key")],
        **options,
    )

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.say("signed in")

    return app


def test_every_request_of_the_table_has_an_example_and_notifications_are_never_gated() -> None:
    served = V1_UNSTABLE.handled_by("agent")
    assert {m.name for m in served if m.is_request} == set(REQUESTS)
    # A notification has no answer to carry -32000: none of them may be gated.
    assert {m.name for m in served if not m.is_request} <= NO_SIGN_IN
    assert set(SERVED_IF) <= set(REQUESTS) - NO_SIGN_IN


async def answer(w: Wired, method: str) -> tuple[int | None, Any]:
    """The error code and data a raw request of ``method`` is answered with (None: a result)."""
    try:
        await w.client_conn.connection.request(method, REQUESTS[method])
    except RequestError as exc:
        return exc.code, exc.data
    return None, None


async def test_every_method_but_the_open_ones_answers_auth_required_before_sign_in(
    unstable_schema_validator: SchemaValidator,
) -> None:
    """AUTH-008, for each method of the table; the error is the one the app always gave."""
    async with wired(full_app(), validator=unstable_schema_validator) as w:
        for method in REQUESTS:
            code, data = await answer(w, method)
            if method in NO_SIGN_IN:
                assert code != ErrorCode.AUTH_REQUIRED, method
            else:
                assert (code, data) == (ErrorCode.AUTH_REQUIRED, {"authMethods": ["api-key"]}), (
                    method
                )
        # Signed in, every one passes the gate (and fails, if at all, on its own terms).
        await w.agent.authenticate("api-key")
        for method in sorted(set(REQUESTS) - NO_SIGN_IN):
            code, _ = await answer(w, method)
            assert code != ErrorCode.AUTH_REQUIRED, method


async def test_a_method_the_app_does_not_serve_answers_method_not_found_before_the_gate(
    unstable_schema_validator: SchemaValidator,
) -> None:
    """No durable store, modes, options or providers: -32601 with the same message as
    ever, for a client that has not signed in too."""
    app = AgentApp("plain", unstable=True, auth_methods=[AgentAuth("api-key", "API key")])
    async with wired(app, validator=unstable_schema_validator) as w:
        for method, (_, message) in SERVED_IF.items():
            with pytest.raises(RequestError) as caught:
                await w.client_conn.connection.request(method, REQUESTS[method])
            assert (caught.value.code, caught.value.message) == (
                ErrorCode.METHOD_NOT_FOUND,
                message,
            ), method


async def test_the_prompt_gate_is_where_v1_and_v2_prompts_both_enter(
    unstable_schema_validator: SchemaValidator,
) -> None:
    """A v2 prompt does not pass through ``AppAgent.prompt``: it calls ``accept_prompt``."""
    async with wired(full_app(), validator=unstable_schema_validator) as w:
        agent = w.agent_conn.agent
        assert isinstance(agent, AppAgent)
        with pytest.raises(AuthRequired):
            await agent.accept_prompt(SID, [s.TextContent(text="hi")])
