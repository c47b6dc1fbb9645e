"""Allowed: offers an auth method of a type this checker's schema does not list, as
codex-acp does (``env_var``, defined by newer unstable ACP schemas). Auth method types
are an extensible union: noted as newer than the checker's schema, not failed."""

from __future__ import annotations

from typing import Any

from _base import Agent, main

FAILS: dict[str, tuple[str, ...]] = {}
NOTES = ("newer than this checker's schema", "'env_var'")


class Correct(Agent):
    def auth_methods(self) -> list[dict[str, Any]]:
        key = {
            "id": "openai-api-key",
            "name": "OpenAI API key",
            "type": "env_var",
            "vars": [{"name": "OPENAI_API_KEY", "label": "API key"}],
        }
        return [key, *super().auth_methods()]


if __name__ == "__main__":
    main(Correct)
