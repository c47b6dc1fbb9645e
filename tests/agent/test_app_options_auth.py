"""AgentApp modes, config options and authentication, as a client sees them."""

from __future__ import annotations

import pytest
from _app_harness import TestClient, wired

from acpwire import schema as s
from acpwire.agent.app import AgentApp, AgentAuth, Choice, Mode, Select, TerminalAuth, Toggle, Turn
from acpwire.protocol.errors import ErrorCode, RequestError
from acpwire.testing import SchemaValidator


def configured_app() -> AgentApp:
    app = AgentApp(
        "t",
        auto_title=False,
        modes=[Mode("ask", "Ask"), Mode("code", "Code", "Edits files")],
        options=[
            Select(
                "model",
                "Model",
                [Choice("fast", "Fast"), Choice("smart", "Smart")],
                category="model",
            ),
            Toggle("deep", "Think harder", category="thought_level"),
        ],
    )

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.say(f"{turn.mode} {turn.config['model']} {turn.config['deep']}")

    return app


def option_ids(options: object) -> list[str]:
    assert isinstance(options, list)
    return [o.id for o in options]


async def test_new_session_offers_modes_and_the_mirroring_mode_option(
    schema_validator: SchemaValidator,
) -> None:
    """CFG-010, CFG-015, CFG-019: modes plus options (mode first), every option with a value."""
    async with wired(configured_app(), validator=schema_validator) as w:
        result = await w.agent.new_session("/work/project")
    assert isinstance(result.modes, s.SessionModeState)
    assert result.modes.current_mode_id == "ask"
    assert option_ids(result.config_options) == ["mode", "model", "deep"]
    wire = s.to_json(result)["configOptions"]
    assert wire[0]["category"] == "mode" and wire[0]["currentValue"] == "ask"
    assert wire[2] == {
        "type": "boolean",
        "id": "deep",
        "name": "Think harder",
        "category": "thought_level",
        "currentValue": False,
    }


async def test_boolean_options_are_hidden_from_clients_without_boolean_support(
    schema_validator: SchemaValidator,
) -> None:
    """CFG-003: neither listed nor settable."""
    async with wired(configured_app(), TestClient(booleans=False), schema_validator) as w:
        result = await w.agent.new_session("/work/project")
        assert option_ids(result.config_options) == ["mode", "model"]
        with pytest.raises(RequestError) as caught:
            await w.agent.set_session_config_option(result.session_id, "deep", True)
        assert caught.value.code == ErrorCode.INVALID_PARAMS
        await w.agent.prompt(result.session_id, "go")
        assert w.client.texts(result.session_id) == ["ask fast False"]


async def test_set_mode_updates_the_mode_option_and_notifies(
    schema_validator: SchemaValidator,
) -> None:
    """MODE-002, MODE-004, CFG-016: current_mode_update and the complete option list."""
    async with wired(configured_app(), validator=schema_validator) as w:
        sid = await w.new_session()
        await w.agent.set_session_mode(sid, "code")
        mode_update, options_update = w.client.updates(sid)
        assert isinstance(mode_update, s.CurrentModeUpdate)
        assert mode_update.current_mode_id == "code"
        assert isinstance(options_update, s.ConfigOptionUpdate)
        assert s.to_json(options_update)["configOptions"][0]["currentValue"] == "code"
        assert len(options_update.config_options) == 3
        await w.agent.prompt(sid, "go")
        assert w.client.texts(sid) == ["code fast False"]


async def test_set_config_option_returns_the_complete_list(
    schema_validator: SchemaValidator,
) -> None:
    """CFG-012, CFG-018: the answer and the update carry every option."""
    async with wired(configured_app(), validator=schema_validator) as w:
        sid = await w.new_session()
        result = await w.agent.set_session_config_option(sid, "model", "smart")
        assert [s.to_json(o)["currentValue"] for o in result.config_options] == [
            "ask",
            "smart",
            False,
        ]
        await w.agent.set_session_config_option(sid, "deep", True)
        await w.agent.set_session_config_option(sid, "mode", "code")
        kinds = [type(u).__name__ for u in w.client.updates(sid)]
        assert kinds == [
            "ConfigOptionUpdate",
            "ConfigOptionUpdate",
            "CurrentModeUpdate",
            "ConfigOptionUpdate",
        ]
        await w.agent.prompt(sid, "go")
        assert w.client.texts(sid) == ["code smart True"]


@pytest.mark.parametrize(
    ("config_id", "value"),
    [("nope", "x"), ("model", "huge"), ("deep", "yes"), ("model", True)],
)
async def test_unknown_options_and_values_are_rejected(
    config_id: str, value: str | bool, schema_validator: SchemaValidator
) -> None:
    """CFG-014."""
    async with wired(configured_app(), validator=schema_validator) as w:
        sid = await w.new_session()
        with pytest.raises(RequestError) as caught:
            await w.agent.set_session_config_option(sid, config_id, value)
        assert caught.value.code == ErrorCode.INVALID_PARAMS


async def test_an_unknown_mode_is_rejected(schema_validator: SchemaValidator) -> None:
    """MODE-003."""
    async with wired(configured_app(), validator=schema_validator) as w:
        sid = await w.new_session()
        with pytest.raises(RequestError) as caught:
            await w.agent.set_session_mode(sid, "yolo")
        assert caught.value.code == ErrorCode.INVALID_PARAMS


def test_declaring_inconsistent_options_fails_loudly() -> None:
    with pytest.raises(ValueError, match="default"):
        AgentApp("t", options=[Select("model", "Model", ["a", "b"], default="c")])
    with pytest.raises(ValueError, match="twice"):
        AgentApp("t", options=[Toggle("x", "X"), Toggle("x", "Y")])
    with pytest.raises(ValueError, match="default_mode"):
        AgentApp("t", modes=[Mode("a", "A")], default_mode="b")


# ---------------------------------------------------------------------------- auth


def auth_app(*, logout: bool = True) -> tuple[AgentApp, list[str]]:
    calls: list[str] = []
    app = AgentApp(
        "t",
        auto_title=False,
        auth_methods=[
            AgentAuth("api-key", "API key"),
            TerminalAuth("login", "Log in", args=["--login"]),
        ],
    )

    @app.prompt
    async def handle(turn: Turn) -> None:
        await turn.say("hi")

    @app.authenticate
    async def authenticate(method_id: str) -> bool:
        calls.append(method_id)
        return True

    if logout:

        @app.logout
        async def do_logout() -> None:
            calls.append("logout")

    return app, calls


async def test_terminal_auth_methods_are_only_listed_to_clients_that_support_them(
    schema_validator: SchemaValidator,
) -> None:
    """AUTH-002."""
    app, _ = auth_app()
    async with wired(app, validator=schema_validator, initialize=False) as w:
        plain = await w.agent.initialize(TestClient().capabilities())
    async with wired(app, validator=schema_validator, initialize=False) as w:
        terminal = await w.agent.initialize(TestClient(auth_terminal=True).capabilities())
    assert [m["id"] for m in s.to_json(plain)["authMethods"]] == ["api-key"]
    listed = s.to_json(terminal)["authMethods"]
    assert listed[1] == {
        "type": "terminal",
        "id": "login",
        "name": "Log in",
        "args": ["--login"],
        "env": {},
    }
    assert s.to_json(plain)["agentCapabilities"]["auth"] == {"logout": {}}


async def test_requests_before_authentication_answer_auth_required(
    schema_validator: SchemaValidator,
) -> None:
    """AUTH-008: -32000 until authenticate succeeds; then sessions work."""
    app, calls = auth_app()
    async with wired(app, validator=schema_validator) as w:
        with pytest.raises(RequestError) as caught:
            await w.agent.new_session("/work/project")
        assert caught.value.code == ErrorCode.AUTH_REQUIRED
        await w.agent.authenticate("api-key")
        sid = await w.new_session()
        assert (await w.agent.prompt(sid, "go")).stop_reason == "end_turn"
    assert calls == ["api-key"]


async def test_authenticate_rejects_unknown_and_terminal_methods(
    schema_validator: SchemaValidator,
) -> None:
    """AUTH-003, AUTH-009."""
    app, calls = auth_app()
    async with wired(app, validator=schema_validator) as w:
        for method_id in ("nope", "login"):
            with pytest.raises(RequestError) as caught:
                await w.agent.authenticate(method_id)
            assert caught.value.code == ErrorCode.INVALID_PARAMS
    assert calls == []


async def test_after_logout_sessions_need_authentication_again(
    schema_validator: SchemaValidator,
) -> None:
    """AUTH-006, AUTH-007."""
    app, calls = auth_app()
    async with wired(app, validator=schema_validator) as w:
        await w.agent.authenticate("api-key")
        sid = await w.new_session()
        await w.agent.logout()
        with pytest.raises(RequestError) as caught:
            await w.agent.prompt(sid, "go")
        assert caught.value.code == ErrorCode.AUTH_REQUIRED
    assert calls == ["api-key", "logout"]


async def test_logout_is_not_offered_without_a_hook(schema_validator: SchemaValidator) -> None:
    app, _ = auth_app(logout=False)
    async with wired(app, validator=schema_validator, initialize=False) as w:
        result = await w.agent.initialize(TestClient().capabilities())
        assert "auth" not in s.to_json(result)["agentCapabilities"]
        w.agent.check_capabilities = False
        with pytest.raises(RequestError) as caught:
            await w.agent.logout()
        assert caught.value.code == ErrorCode.METHOD_NOT_FOUND


async def test_an_is_authenticated_hook_lets_signed_in_users_straight_through(
    schema_validator: SchemaValidator,
) -> None:
    app, _ = auth_app()

    @app.is_authenticated
    async def signed_in() -> bool:
        return True

    async with wired(app, validator=schema_validator) as w:
        sid = await w.new_session()
        assert (await w.agent.prompt(sid, "go")).stop_reason == "end_turn"
