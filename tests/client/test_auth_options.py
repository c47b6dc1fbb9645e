"""Reading an agent's auth methods as what a person has to do (real agents' answers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acpwire import schema as s
from acpwire.client import AuthOption, EnvVarSpec, auth_options


def initialize_answer(captures_dir: Path, name: str) -> s.InitializeResponse:
    for line in (captures_dir / name).read_text().splitlines():
        record: dict[str, Any] = json.loads(line)
        message = record.get("msg") or {}
        if record.get("dir") == "agent->client" and message.get("id") == 0:
            return s.convert(message["result"], s.InitializeResponse)
    raise AssertionError(f"no initialize answer in {name}")


def test_claude_agent_acp_offers_terminal_logins_run_with_its_own_command(
    captures_dir: Path,
) -> None:
    answer = initialize_answer(captures_dir, "claude-agent-acp.jsonl")
    options = auth_options(answer, ["claude-agent-acp"])
    assert [(o.id, o.kind) for o in options] == [
        ("claude-ai-login", "terminal"),
        ("console-login", "terminal"),
    ]
    assert options[0].argv == ["claude-agent-acp", "--cli", "auth", "login", "--claudeai"]


def test_gemini_cli_offers_agent_methods(captures_dir: Path) -> None:
    answer = initialize_answer(captures_dir, "gemini-cli.jsonl")
    options = auth_options(answer, ["gemini", "--acp"])
    assert [o.id for o in options] == ["oauth-personal", "gemini-api-key", "vertex-ai", "gateway"]
    assert {o.kind for o in options} == {"agent"}
    assert options[0].description == "Log in with your Google account"


def test_codex_env_var_methods_are_read_from_the_unknown_member() -> None:
    """codex-acp's ``env_var`` methods are not in the v1 schema: they arrive as unknown."""
    answer = s.convert(
        {
            "protocolVersion": 1,
            "authMethods": [
                {
                    "id": "codex-api-key",
                    "name": "Use CODEX_API_KEY",
                    "type": "env_var",
                    "vars": [{"name": "CODEX_API_KEY"}],
                },
                {
                    "id": "openai-api-key",
                    "name": "Use OPENAI_API_KEY",
                    "type": "env_var",
                    "vars": [
                        {"name": "OPENAI_API_KEY", "label": "OpenAI key"},
                        {"name": "OPENAI_BASE_URL", "secret": False, "optional": True},
                    ],
                    "link": "https://platform.openai.com/api-keys",
                },
                {"id": "sso", "name": "Single sign-on", "type": "_acme_sso"},
            ],
        },
        s.InitializeResponse,
    )
    assert isinstance(answer.auth_methods, list)
    assert all(isinstance(m, s.UnknownAuthMethod) for m in answer.auth_methods)
    options = auth_options(answer, ["codex-acp"])
    assert options == [
        AuthOption(
            "codex-api-key", "Use CODEX_API_KEY", "env_var", vars=[EnvVarSpec("CODEX_API_KEY")]
        ),
        AuthOption(
            "openai-api-key",
            "Use OPENAI_API_KEY",
            "env_var",
            vars=[
                EnvVarSpec("OPENAI_API_KEY", "OpenAI key"),
                EnvVarSpec("OPENAI_BASE_URL", secret=False, optional=True),
            ],
            link="https://platform.openai.com/api-keys",
        ),
        AuthOption("sso", "Single sign-on", "other", type="_acme_sso"),
    ]
    assert not options[2].usable


def test_no_answer_or_no_methods_means_no_options() -> None:
    assert auth_options(None, ["x"]) == []
    assert auth_options(s.InitializeResponse(protocol_version=1), ["x"]) == []
