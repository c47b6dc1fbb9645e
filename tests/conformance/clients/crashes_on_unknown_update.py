"""Defect: dies on a session update kind it does not know (CLIENT-002)."""

from __future__ import annotations

from typing import Any

from _client import Client, crash, main

FAILS = {"unknown-updates": ("CLIENT-002",)}


class Broken(Client):
    def on_update(self, update: dict[str, Any]) -> None:
        if update.get("sessionUpdate") not in KNOWN:
            crash(f"unknown session update {update.get('sessionUpdate')!r}")
        super().on_update(update)


KNOWN = {
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
}


if __name__ == "__main__":
    main(Broken)
