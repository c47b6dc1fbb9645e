"""A toolkit agent for the subprocess tests: ``python app_agent_script.py STORE_URL [--unstable]``.

Prompt ``edit`` asks permission for an edit (the test client holds the answer);
``stream forever`` streams chunks ``c0 ``, ``c1 ``, ... until cancelled or
killed; anything else is echoed.
"""

from __future__ import annotations

import asyncio
import itertools
import sys

from acpwire.agent.app import AgentApp, Mode, Turn

app = AgentApp(
    "script-agent",
    store=sys.argv[1],
    modes=[Mode("ask", "Ask"), Mode("code", "Code")],
    unstable="--unstable" in sys.argv[2:],
)


@app.prompt
async def handle(turn: Turn) -> None:
    if turn.text == "edit":
        async with turn.tool("Edit notes.txt", kind="edit") as call:
            await call.diff("/work/project/notes.txt", "new\n", "old\n")
            await call.require_permission()
        return
    if turn.text == "stream forever":
        for i in itertools.count():
            await turn.say(f"c{i} ")
            if i % 50 == 49:
                await asyncio.sleep(0.001)  # let the write-behind timer and the store run
    await turn.say(f"echo: {turn.text}")


if __name__ == "__main__":
    app.run(argv=[])
