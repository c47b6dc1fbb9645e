"""AgentApp providers (unstable providers/list, set, disable), schema-checked."""

from __future__ import annotations

import pytest
from _app_harness import TestClient, wired

from acpwire import schema as s
from acpwire.agent.app import AgentApp, Provider, ProviderConfig, Turn
from acpwire.protocol.errors import ErrorCode, InvalidParams, RequestError
from acpwire.testing import SchemaValidator

GATEWAY = "https://gateway.example/v1"


def provider_app(*, unstable: bool = True) -> tuple[AgentApp, list[tuple[str, object]]]:
    app = AgentApp(
        "routed",
        unstable=unstable,
        providers=[
            Provider(
                "main",
                ["anthropic", "openai"],
                required=True,
                current=ProviderConfig("anthropic", "https://api.anthropic.com"),
            ),
            Provider("backup", ["openai"]),
        ],
    )
    changes: list[tuple[str, object]] = []

    @app.provider_changed
    async def changed(provider_id: str, config: ProviderConfig | None) -> None:
        if config is not None and config.base_url.endswith("/refused"):
            raise InvalidParams("that gateway is not allowed")
        changes.append((provider_id, config))

    @app.prompt
    async def handle(turn: Turn) -> None:
        main = app.providers.current("main")
        assert main is not None
        await turn.say(f"{main.api_type} via {main.base_url}")

    return app, changes


def unstable_client() -> TestClient:
    client = TestClient()
    client.unstable = True
    return client


async def test_a_client_reroutes_a_provider_and_the_handler_uses_it(
    unstable_schema_validator: SchemaValidator,
) -> None:
    app, changes = provider_app()
    client = unstable_client()
    async with wired(app, client, unstable_schema_validator, initialize=False) as w:
        init = s.to_json(await w.agent.initialize(client.capabilities()))
        assert init["agentCapabilities"]["providers"] == {}
        listed = s.to_json(await w.agent.list_providers())["providers"]
        assert listed == [
            {
                "providerId": "main",
                "supported": ["anthropic", "openai"],
                "required": True,
                "current": {"apiType": "anthropic", "baseUrl": "https://api.anthropic.com"},
            },
            {"providerId": "backup", "supported": ["openai"], "required": False, "current": None},
        ]
        await w.agent.set_provider("main", "openai", GATEWAY, headers={"authorization": "Bearer k"})
        sid = await w.new_session()
        await w.agent.prompt(sid, "which?")
        after = s.to_json(await w.agent.list_providers())["providers"][0]
    assert client.texts(sid) == [f"openai via {GATEWAY}"]
    assert after["current"] == {"apiType": "openai", "baseUrl": GATEWAY}
    (provider_id, config) = changes[0]
    assert provider_id == "main" and isinstance(config, ProviderConfig)
    assert dict(config.headers) == {"authorization": "Bearer k"}
    assert "Bearer" not in repr(config)  # credentials stay out of logs
    assert all("Bearer" not in str(m) for _, m in w.log.entries if "result" in m)


@pytest.mark.parametrize(
    ("call", "args"),
    [
        ("set_provider", ("nope", "openai", GATEWAY)),
        ("set_provider", ("backup", "anthropic", GATEWAY)),
        ("set_provider", ("backup", "openai", "file:///etc/passwd")),
        ("set_provider", ("backup", "openai", "gateway.example")),
        ("set_provider", ("backup", "openai", GATEWAY + "/refused")),
        ("disable_provider", ("main",)),
        ("disable_provider", ("nope",)),
    ],
)
async def test_refused_changes_are_invalid_params_and_change_nothing(
    call: str, args: tuple[str, ...], unstable_schema_validator: SchemaValidator
) -> None:
    app, changes = provider_app()
    async with wired(app, unstable_client(), unstable_schema_validator) as w:
        before = s.to_json(await w.agent.list_providers())
        with pytest.raises(RequestError) as caught:
            await getattr(w.agent, call)(*args)
        assert caught.value.code == ErrorCode.INVALID_PARAMS
        assert s.to_json(await w.agent.list_providers()) == before
    assert changes == []


async def test_disabling_an_optional_provider_clears_its_routing(
    unstable_schema_validator: SchemaValidator,
) -> None:
    app, changes = provider_app()
    async with wired(app, unstable_client(), unstable_schema_validator) as w:
        await w.agent.set_provider("backup", "openai", GATEWAY)
        await w.agent.disable_provider("backup")
        backup = s.to_json(await w.agent.list_providers())["providers"][1]
    assert backup["current"] is None
    assert [(p, c is None) for p, c in changes] == [("backup", False), ("backup", True)]
    assert app.providers.current("backup") is None


async def test_without_the_opt_in_or_declared_providers_nothing_is_offered() -> None:
    stable, _ = provider_app(unstable=False)
    async with wired(stable, unstable_client(), initialize=False) as w:
        init = s.to_json(await w.agent.initialize(w.client.capabilities()))
        assert "providers" not in init["agentCapabilities"]
    bare = AgentApp("bare", unstable=True)
    async with wired(bare, unstable_client(), initialize=False) as w:
        init = s.to_json(await w.agent.initialize(w.client.capabilities()))
        assert "providers" not in init["agentCapabilities"]
        w.agent.check_capabilities = False
        with pytest.raises(RequestError) as caught:
            await w.agent.list_providers()
        assert caught.value.code == ErrorCode.METHOD_NOT_FOUND
