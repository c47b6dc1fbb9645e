"""Defect: session/list reports each session's cwd with a trailing slash (LIST-011)."""

from __future__ import annotations

from typing import Any

from _agent import Agent, Session, main

FAILS = {"session-list": ("LIST-011",)}


class Broken(Agent):
    def session_info(self, session: Session) -> dict[str, Any]:
        return {"sessionId": session.id, "cwd": session.cwd + "/"}


if __name__ == "__main__":
    main(Broken)
