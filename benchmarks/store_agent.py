"""The AgentApp that ``bench_store.py`` and ``bench_high_tier.py`` drive: ``python store_agent.py STORE``.

``STORE`` is a store URL or path (``open_store``), or ``none`` for an app
without a store (sessions in memory, no ``session/load``).

Prompts:

* ``stream N``: N ``turn.say`` chunks of 64 bytes (one message);
* ``messages N``: N separate one-chunk messages (each its own ``messageId``);
* ``legacy N``: writes N one-chunk records of one message straight into the
  store, as older versions recorded every chunk (nothing is sent);
* anything else: ``end_turn`` at once.
"""

from __future__ import annotations

import sys
import uuid

from acpwire import schema as s
from acpwire.agent import AgentApp, Turn

TEXT64 = "acp-bench " * 6 + "data"  # as _scenario.TEXT64, without the harness's imports

app = AgentApp(
    "store-bench", store=None if sys.argv[1] == "none" else sys.argv[1], auto_title=False
)


@app.prompt
async def handle(turn: Turn) -> None:
    verb, _, count = turn.text.partition(" ")
    n = int(count) if count.isdigit() else 0
    if verb == "stream":
        for _ in range(n):
            await turn.say(TEXT64)
    elif verb == "messages":
        for _ in range(n):
            await turn.send(
                s.AgentMessageChunk(
                    content=s.TextContent(text=TEXT64), message_id=str(uuid.uuid4())
                )
            )
    elif verb == "legacy":
        chunk = {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": TEXT64},
            "messageId": str(uuid.uuid4()),
        }
        for start in range(0, n, 10_000):
            await turn.session.store.extend(turn.session_id, [chunk] * min(10_000, n - start))


if __name__ == "__main__":
    app.run(argv=[])
