"""Defect: session/set_config_option answers with the options as they were before the change (CFG-012)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"set-config-option": ("CFG-012",)}


class Broken(Agent):
    def on_session_set_config_option(self, params: dict[str, Any]) -> dict[str, Any]:
        before = self.config_options(self.session(params))
        super().on_session_set_config_option(params)
        return {"configOptions": before}


if __name__ == "__main__":
    main(Broken)
