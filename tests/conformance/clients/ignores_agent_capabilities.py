"""Defect: lists, loads, resumes, closes and deletes sessions, logs out, adds roots and an HTTP MCP server, none of them advertised."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {
    "client-gates": (
        "SESS-004",
        "SESS-009",
        "SESS-013",
        "SESS-017",
        "SESS-026",
        "LIST-003",
        "DEL-003",
        "AUTH-001",
    )
}


class Broken(Client):
    def open_session(self) -> Any:
        http = {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": []}
        answer = self.call(
            "session/new",
            {"cwd": self.cwd, "mcpServers": [http], "additionalDirectories": [self.cwd]},
        )
        if isinstance(answer, dict) and "result" in answer:
            sid = answer["result"].get("sessionId")
            again = {"sessionId": sid, "cwd": self.cwd, "mcpServers": []}
            for method, params in (
                ("session/list", {}),
                ("session/load", again),
                ("session/resume", again),
                ("session/close", {"sessionId": "other"}),
                ("session/delete", {"sessionId": "other"}),
                ("logout", {}),
            ):
                self.write({"id": self.new_id(), "method": method, "params": params})
        return answer


if __name__ == "__main__":
    main(Broken)
