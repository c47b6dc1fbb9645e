"""Defect: Writes a file through the client with a relative path (OVR-001)."""

from __future__ import annotations

from _agent import Agent, Session, main

FAILS = {"absolute-paths": ("OVR-001",)}


class Broken(Agent):
    def tools_turn(self, session: Session) -> str:
        stop = super().tools_turn(session)
        self.call(
            "fs/write_text_file", {"sessionId": session.id, "path": "notes.txt", "content": "x"}
        )
        return stop


if __name__ == "__main__":
    main(Broken)
