"""Defect: Offers a terminal auth method to a client that did not advertise auth.terminal (AUTH-002)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"auth-methods": ("AUTH-002",)}


class Broken(Agent):
    def auth_methods(self) -> list[dict[str, Any]]:
        return [{"id": "login", "name": "Log in", "type": "terminal", "args": ["--login"]}]


if __name__ == "__main__":
    main(Broken)
