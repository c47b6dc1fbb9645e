"""Defect: Accepts a config option it does not have (CFG-014)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, main

FAILS = {"unknown-config": ("CFG-014",)}


class Broken(Agent):
    def on_session_set_config_option(self, params: dict[str, Any]) -> dict[str, Any]:
        if params.get("configId") not in ("model", "verbose"):
            return {"configOptions": self.config_options(self.session(params))}
        return super().on_session_set_config_option(params)


if __name__ == "__main__":
    main(Broken)
