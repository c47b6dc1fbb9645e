"""Defect: Refuses every second prompt it is sent (an error), whatever the prompt; the
prompt for an unknown session counts too, so the checker's first real prompt is refused
and the retry taken (PROMPT-003), then the checks alternate."""

from __future__ import annotations

import itertools
from typing import Any

from _agent import Agent, main

FAILS = {
    "prompt": ("PROMPT-003",),
    "second-prompt": ("PROMPT-007",),
    "meta-accepted": ("EXT-008",),
    "after-cancel": ("CANCEL-008",),
}


class Broken(Agent):
    def __init__(self) -> None:
        super().__init__()
        self.prompts = itertools.count(1)

    def run_prompt(self, request_id: Any, params: dict[str, Any]) -> None:
        if next(self.prompts) % 2 == 0:
            self.respond_error(request_id, -32603, "busy, try again")
            return
        super().run_prompt(request_id, params)


if __name__ == "__main__":
    main(Broken)
