"""A tool-using agent: reads a file through the client, proposes an edit (diff + permission),
then runs a command in the client's terminal.

It is meant as a model of a correct agent: every step is a tool call whose
status tells the truth, and nothing the client or the user says no to ends the
turn with an error. A missing file fails the read call, a rejected permission
fails the edit call, a command that cannot start fails the execute call; the
plan shows which steps were done and which were not, and the turn ends
normally with a sentence saying what happened.

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
    commands=[Command("review", "Review a file", hint="path")],
)


@app.prompt
async def review(turn: Turn) -> None:
    name = turn.command[1] if turn.command else turn.text
    # The path is the first line: a resource link or more text may follow it.
    target = turn.resolve(name.strip().partition("\n")[0] or "README.md")
    plan = await turn.plan(f"Read {target}", "Mark it reviewed", "Count its lines")

    # 1. Read through the client (sees unsaved editor buffers); fall back to disk.
    #    A failure inside the block (the client's error, a missing file) fails the
    #    call, not the turn: the block is left and `read.failed` says so.
    await plan.start(0)
    old: str | None = None
    async with turn.tool(f"Read {target}", kind="read", locations=[location(target, 1)]) as read:
        old = await turn.read_file(target, fallback=True)
        await read.update(raw_output={"chars": len(old)})
    if old is None:
        await plan.fail(0, read.error)
        await turn.say(f"I could not read {target}: {read.error}.\n")
        return
    await plan.complete(0)

    # 2. Propose the edit as a diff and ask before writing it.
    await plan.start(1)
    if MARKER in old:
        await turn.say(f"{target} is already marked as reviewed.\n")
        await plan.complete(1)
    else:
        async with turn.tool(f"Mark {target} reviewed", kind="edit") as edit:
            new = old + ("" if old.endswith("\n") or not old else "\n") + MARKER
            await edit.diff(target, new, old)  # the call stays pending while we ask
            if turn.mode != "auto":
                await edit.require_permission()  # a rejection fails the call
            await edit.start()
            await turn.write_file(target, new, fallback=True)
        if edit.rejected:
            await plan.fail(1, "permission rejected")
            await turn.say(f"Not marking {target}: you rejected the edit.\n")
        elif edit.failed:
            await plan.fail(1, edit.error)
            await turn.say(f"Could not mark {target}: {edit.error}.\n")
        else:
            await plan.complete(1)

    # 3. Run a command; its terminal is embedded in an "execute" tool call.
    await plan.start(2)
    result = await turn.run("wc", ["-l", target], fallback=True)
    if result.error is not None:
        await plan.fail(2, result.error)
        await turn.say(f"Could not count the lines: {result.error}.\n")
        return
    await plan.complete(2)
    await turn.say(f"`wc -l` says: {result.output.strip()} (exit {result.exit_code})\n")


if __name__ == "__main__":
    app.run()
