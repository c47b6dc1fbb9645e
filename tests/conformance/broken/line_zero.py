"""Defect: Reads a file from line 0 (OVR-002)."""

from __future__ import annotations

from _agent import Agent, Session, main

FAILS = {"line-numbers": ("OVR-002",)}


class Broken(Agent):
    def tools_turn(self, session: Session) -> str:
        stop = super().tools_turn(session)
        self.call(
            "fs/read_text_file",
            {"sessionId": session.id, "path": self.file_path(session), "line": 0},
        )
        return stop


if __name__ == "__main__":
    main(Broken)
