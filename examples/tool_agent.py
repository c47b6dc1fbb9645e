"""A tool-using agent: reads a file through the client, proposes an edit (diff + permission),
then runs a command in the client's terminal.

Prompt it with a file path relative to the session folder, e.g. ``notes.txt``.
Sessions are kept in ``tool_agent.sqlite3`` next to this file, so the client can
list, load and resume them after a restart.

Run: ``python examples/tool_agent.py`` (stdio).
"""

from __future__ import annotations

from pathlib import Path

from acpwire.agent.app import AgentApp, Command, Mode, Turn, location

MARKER = "# reviewed by tool-agent\n"

app = AgentApp(
    "tool-agent",
    title="Tool agent",
    store=Path(__file__).with_name("tool_agent.sqlite3"),
    modes=[
        Mode("ask", "Ask", "Ask before every edit"),
        Mode("auto", "Auto", "Edit without asking"),
    ],
)


@app.prompt
async def review(turn: Turn) -> None:
    target = turn.resolve(turn.text.strip().partition("\n")[0] or "README.md")
    plan = await turn.plan(f"Read {target}", "Mark it reviewed", "Count its lines")

    # 1. Read through the client (sees unsaved editor buffers); fall back to disk.
    await plan.start(0)
    async with turn.tool(f"Read {target}", kind="read", locations=[location(target, 1)]) as call:
        old = await turn.read_file(target, fallback=True)
        await call.update(raw_output={"chars": len(old)})
    await plan.complete(0)

    # 2. Propose the edit as a diff and ask before writing it.
    await plan.start(1)
    if MARKER in old:
        await turn.say(f"{target} is already marked as reviewed.\n")
    else:
        async with turn.tool(f"Mark {target} reviewed", kind="edit") as call:
            new = old + ("" if old.endswith("\n") or not old else "\n") + MARKER
            await call.diff(target, new, old)
            if turn.mode != "auto":
                await call.require_permission()  # rejected -> the call is marked failed
            await turn.write_file(target, new, fallback=True)
    await plan.complete(1)

    # 3. Run a command; its terminal is embedded in an "execute" tool call.
    await plan.start(2)
    result = await turn.run("wc", ["-l", target], fallback=True)
    await plan.complete(2)
    await turn.say(f"`wc -l` says: {result.output.strip()} (exit {result.exit_code})\n")
    await turn.set_commands([Command("review", "Review a file", hint="path")])


if __name__ == "__main__":
    app.run()
