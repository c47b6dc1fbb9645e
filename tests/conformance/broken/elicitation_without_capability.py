"""Defect: Asks for a form elicitation without the elicitation capability (ELIC-005)."""

from __future__ import annotations

from _agent import Agent, Session, main

FAILS = {"capability-gates": ("ELIC-005",)}


class Broken(Agent):
    def turn(self, session: Session, text: str) -> str:
        if not self.client_caps.get("elicitation") and text != "slow":
            self.call(
                "elicitation/create",
                {
                    "sessionId": session.id,
                    "mode": "form",
                    "message": "Name?",
                    "requestedSchema": {"type": "object", "properties": {}},
                },
            )
        return super().turn(session, text)


if __name__ == "__main__":
    main(Broken)
