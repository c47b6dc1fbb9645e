"""Defect: Sends compaction updates without session.compaction (UNST-001)."""

from __future__ import annotations

from _agent import Agent, Session, main

FAILS = {"capability-gates": ("UNST-001",)}


class Broken(Agent):
    def say(self, session: Session, text: str) -> None:
        super().say(session, text)
        self.update(
            session,
            {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed"},
        )


if __name__ == "__main__":
    main(Broken)
