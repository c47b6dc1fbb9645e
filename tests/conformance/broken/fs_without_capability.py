"""Defect: Reads a file through the client without the fs capability (FS-002)."""

from __future__ import annotations

from _agent import Agent, Session, main

FAILS = {"capability-gates": ("FS-002",)}


class Broken(Agent):
    def turn(self, session: Session, text: str) -> str:
        if not (self.client_caps.get("fs") or {}).get("readTextFile") and text != "slow":
            self.call(
                "fs/read_text_file", {"sessionId": session.id, "path": self.file_path(session)}
            )
        return super().turn(session, text)


if __name__ == "__main__":
    main(Broken)
