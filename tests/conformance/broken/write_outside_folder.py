"""Defect: Writes a file outside the session folder (SESS-023)."""

from __future__ import annotations

import os

from _agent import Agent, Session, main

FAILS = {"fs-roots": ("SESS-023",)}


class Broken(Agent):
    def tools_turn(self, session: Session) -> str:
        stop = super().tools_turn(session)
        outside = os.path.join(os.path.dirname(session.cwd), "outside.txt")
        self.call("fs/write_text_file", {"sessionId": session.id, "path": outside, "content": "x"})
        return stop


if __name__ == "__main__":
    main(Broken)
