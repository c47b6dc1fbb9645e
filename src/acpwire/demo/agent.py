"""The built-in demo agent: every ACP feature, deterministic, offline, no model.

It understands a small command language (docs/demo.md), typed plainly
(``read README.md``) or as a slash command (``/read README.md``); the commands
are published with ``available_commands_update``. Work on files and commands
goes through the client (``fs/*``, ``terminal/*``) when the client offers it,
else it falls back to the agent's own disk and processes, inside the session's
folders only.

:func:`build_app` makes a fresh :class:`~acpwire.agent.app.AgentApp`;
:func:`main` serves it on stdio (``python -m acpwire.demo``, ``acp demo-agent``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fnmatch
import json
import os
import re
import shlex
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import schema as s
from ..agent.app import (
    AgentApp,
    Choice,
    Mode,
    Select,
    Toggle,
    ToolCall,
    ToolError,
    Turn,
    error_text,
    location,
    permission_option,
)
from ..protocol.errors import AcpError, InvalidParams, ResourceNotFound
from ..store import STORE_ENV, SessionStore, default_data_dir, store_from_env
from .text import (
    fence,
    language_of,
    line_count,
    number_argument,
    plural,
    shown_value,
    split_args,
    unescape,
)

__all__ = ["APP_NAME", "COMMANDS", "DemoCommand", "build_app", "default_store_path", "main"]

APP_NAME = "acpwire-demo"

STEP_DELAY = 0.25
"""Seconds each ``plan`` step pauses, so a person sees the statuses move."""
SLOW_TICK = 0.5
"""Seconds between two progress updates of ``slow``."""
MAX_SLOW_SECONDS = 600.0
MAX_STREAM_CHUNKS = 10_000
MAX_WALK_FILES = 2000
"""``search`` and ``plan`` look at no more files than this."""
MAX_SEARCH_READS = 300
MAX_FILE_BYTES = 512 * 1024
MAX_MATCHES = 100
MAX_LOCATIONS = 50
RUN_OUTPUT_LIMIT = 64 * 1024
SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache",
     ".pytest_cache", ".ruff_cache", ".tox", "dist", "build"}
)  # fmt: skip

PERMISSION_OPTIONS = (
    permission_option("allow_once", "Allow once"),
    permission_option("allow_always", "Allow always"),
    permission_option("reject_once", "Reject"),
)

Handler = Callable[[Turn, list[str], str], Awaitable[None]]


@dataclass(frozen=True)
class DemoCommand:
    """One word of the command language: ``name``, its argument ``hint`` and what it shows."""

    name: str
    hint: str | None
    description: str


COMMANDS: tuple[DemoCommand, ...] = (
    DemoCommand("help", None, "List the commands"),
    DemoCommand("read", "PATH [LINE [LIMIT]]", "Read a file through the client (tool call: read)"),
    DemoCommand("search", "PATTERN [GLOB]", "Search the session folder (tool call: search)"),
    DemoCommand("edit", "PATH OLD NEW", "Replace text in a file: diff + permission (tool call: edit)"),
    DemoCommand("write", "PATH TEXT", "Write a whole file: diff + permission (tool call: edit)"),
    DemoCommand("run", "COMMAND [ARGS...]", "Run a command in a client terminal (tool call: execute)"),
    DemoCommand("plan", None, "Run a multi-step plan whose entries change status"),
    DemoCommand("think", "TEXT", "Stream thought chunks"),
    DemoCommand("mode", "ask|code", "Show or switch the session mode"),
    DemoCommand("set", "OPTION VALUE", "Change a config option (model, thought_level, verbose)"),
    DemoCommand("status", None, "Show the session, its mode, options and the client's capabilities"),
    DemoCommand("elicit", None, "Ask you a small form (elicitation)"),
    DemoCommand("stream", "N", "Stream N message chunks"),
    DemoCommand("slow", "[SECONDS]", "A slow turn with progress; cancel it"),
    DemoCommand("usage", None, "Report context usage and cost (usage_update)"),
    DemoCommand("title", "TEXT", "Set the session title (session_info_update)"),
)  # fmt: skip
COMMAND_NAMES = frozenset(c.name for c in COMMANDS)


# ---------------------------------------------------------------------- helpers


def parse(turn: Turn) -> tuple[str | None, str]:
    """``(command, rest)``; command is None when the prompt is not one."""
    if turn.command is not None:
        return turn.command
    text = turn.text.strip()
    head, _, rest = text.partition(" ") if " " in text else text.partition("\n")
    word = head.lstrip("/").lower()
    if word in COMMAND_NAMES:
        return word, rest.strip()
    return None, text


def offered_options(turn: Turn) -> dict[str, str]:
    """The config options this client was offered, by id, with their values as shown."""
    offered = [
        o.id
        for o in turn.session.config_options() or []
        if isinstance(o, (s.SessionConfigSelect, s.SessionConfigBoolean))
    ]
    return {option: shown_value(turn.config.get(option)) for option in offered}


def walk(root: str, glob: str | None = None, limit: int = MAX_WALK_FILES) -> tuple[list[str], bool]:
    """Relative POSIX paths of text-looking files under ``root``, sorted; True when cut at ``limit``."""
    found: list[str] = []
    if not os.path.isdir(root):
        return found, False
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if glob and not (fnmatch.fnmatch(rel, glob) or fnmatch.fnmatch(name, glob)):
                continue
            try:
                if not os.path.isfile(full) or os.path.getsize(full) > MAX_FILE_BYTES:
                    continue
                with open(full, "rb") as handle:
                    if b"\0" in handle.read(1024):
                        continue
            except OSError:
                continue
            found.append(rel)
            if len(found) >= limit:
                return found, True
    return found, False


async def ask_permission(turn: Turn, call: ToolCall) -> None:
    """In ``ask`` mode, ask (allow once / allow always / reject); ``code`` mode does not ask."""
    if turn.mode == "code":
        return
    await call.require_permission(PERMISSION_OPTIONS)


async def verbose_footer(turn: Turn) -> None:
    if turn.config.get("verbose") is True:
        values = ", ".join(f"{k}={v}" for k, v in offered_options(turn).items())
        await turn.say(f"\n_[{values}]_\n")


# ---------------------------------------------------------------------- the commands


async def cmd_help(turn: Turn, args: list[str], rest: str) -> None:
    await turn.say(
        "**acpwire demo agent** — deterministic, offline, no model. "
        "Type a command, or the same with a `/` in front:\n\n"
    )
    for command in COMMANDS:
        usage = command.name + (f" {command.hint}" if command.hint else "")
        await turn.say(f"- `{usage}` — {command.description}\n")
    await turn.say(
        f"\nMode **{turn.mode}**: "
        + (
            "edits and commands ask for permission first."
            if turn.mode != "code"
            else "edits and commands run without asking."
        )
        + " Anything else you type is echoed back.\n"
    )


async def cmd_read(turn: Turn, args: list[str], rest: str) -> None:
    if not args:
        await turn.say("Usage: `read PATH [LINE [LIMIT]]`\n")
        return
    try:
        line = int(args[1]) if len(args) > 1 else None
        limit = int(args[2]) if len(args) > 2 else None
        if (line is not None and line < 1) or (limit is not None and limit < 1):
            raise ValueError
    except ValueError:
        await turn.say("LINE and LIMIT must be positive whole numbers.\n")
        return
    path = turn.resolve(args[0])
    text: str | None = None
    title = f"Read {args[0]}" + (f" from line {line}" if line else "")
    async with turn.tool(
        title,
        kind="read",
        locations=[location(path, line or 1)],
        raw_input={"path": path, "line": line, "limit": limit},
    ) as call:
        try:
            text = await turn.read_file(path, line=line, limit=limit, fallback=True)
        except (AcpError, OSError, ValueError) as error:
            raise ToolError(f"Could not read {args[0]}: {error_text(error)}") from None
        await call.add(fence(text, language_of(path)))
        await call.update(raw_output={"lines": line_count(text), "chars": len(text)})
    if text is None:
        await turn.say(f"I could not read `{args[0]}` (see the failed tool call).\n")
        return
    source = "through the client" if turn.can_read_files else "from disk (the client has no fs)"
    await turn.say(f"`{args[0]}` ({plural(line_count(text), 'line')}, read {source}):\n\n")
    await turn.say(fence(text, language_of(path)))
    await verbose_footer(turn)


async def cmd_search(turn: Turn, args: list[str], rest: str) -> None:
    if not args:
        await turn.say("Usage: `search PATTERN [GLOB]`, e.g. `search TODO *.py`\n")
        return
    pattern_text, glob = args[0], (args[1] if len(args) > 1 else None)
    try:
        pattern = re.compile(pattern_text, re.IGNORECASE)
    except re.error:
        pattern = re.compile(re.escape(pattern_text), re.IGNORECASE)
    title = f"Search {pattern_text!r}" + (f" in {glob}" if glob else "")
    matches: list[tuple[str, int, str]] = []
    scanned = 0
    cut = False
    async with turn.tool(
        title, kind="search", raw_input={"pattern": pattern_text, "glob": glob, "cwd": turn.cwd}
    ) as call:
        files, cut = await asyncio.to_thread(walk, turn.cwd, glob)
        await call.update(status="in_progress")
        for rel in files[:MAX_SEARCH_READS]:
            try:
                text = await turn.read_file(turn.resolve(rel), fallback=True)
            except (AcpError, OSError, ValueError):
                continue
            scanned += 1
            for number, line_text in enumerate(text.splitlines(), 1):
                if pattern.search(line_text):
                    matches.append((rel, number, line_text.strip()[:200]))
                    if len(matches) >= MAX_MATCHES:
                        break
            if len(matches) >= MAX_MATCHES:
                cut = True
                break
        cut = cut or len(files) > MAX_SEARCH_READS
        listing = "\n".join(f"{rel}:{number}: {text}" for rel, number, text in matches)
        await call.update(
            content=[fence(listing) if listing else "No matches."],
            locations=[location(turn.resolve(r), n) for r, n, _ in matches[:MAX_LOCATIONS]],
            raw_output={"matches": len(matches), "filesScanned": scanned, "truncated": cut},
        )
    files_hit = len({rel for rel, _, _ in matches})
    more = " (stopped early: limits reached)" if cut else ""
    await turn.say(
        f"Found {len(matches)} match{'es' if len(matches) != 1 else ''} in {files_hit} "
        f"file{'s' if files_hit != 1 else ''} ({scanned} scanned){more}.\n"
    )
    if matches:
        await turn.say(fence("\n".join(f"{r}:{n}: {t}" for r, n, t in matches[:20])))
    await verbose_footer(turn)


async def _edit(
    turn: Turn, shown: str, new_text_for: Callable[[str | None], str], *, probe_only: bool
) -> None:
    """Read the file, build the new text, show the diff, ask, write.

    ``probe_only`` (``write``): the read only feeds the diff, so whatever it
    answers the write goes ahead. Clients differ on a missing file: an error
    (-32002 or -32603) or an empty text (Toad).
    """
    path = turn.resolve(shown)
    old: str | None = None
    existed: bool | None = None  # None: the read could not tell
    async with turn.tool(
        f"Edit {shown}", kind="edit", locations=[location(path)], raw_input={"path": path}
    ) as call:
        try:
            old = await turn.read_file(path, fallback=True)
            existed = True if old else None
        except (FileNotFoundError, ResourceNotFound):
            existed = False
        except (AcpError, OSError, ValueError) as error:
            if not probe_only:
                raise ToolError(f"Could not read {shown}: {error_text(error)}") from None
        new = new_text_for(old)
        first = _first_changed_line(old or "", new)
        # Only a diff: the call stays pending until permission is granted.
        await call.update(
            content=[s.Diff(path=path, old_text=old, new_text=new)],
            locations=[location(path, first)],
        )
        await ask_permission(turn, call)
        await call.start()
        try:
            await turn.write_file(path, new, fallback=True)
        except (AcpError, OSError) as error:
            raise ToolError(f"Could not write {shown}: {error_text(error)}") from None
    if call.status == "completed":
        how = "through the client" if turn.can_write_files else "on disk (the client has no fs)"
        done = {False: "created", True: "changed", None: "written"}[existed]
        await turn.say(f"Done: `{shown}` was {done} {how}.\n")
    else:
        await turn.say(f"`{shown}` was not changed: {call.error or 'failed'}.\n")
    await verbose_footer(turn)


def _first_changed_line(old: str, new: str) -> int:
    for number, (a, b) in enumerate(zip(old.splitlines(), new.splitlines(), strict=False), 1):
        if a != b:
            return number
    return min(len(old.splitlines()), len(new.splitlines())) + 1


async def cmd_edit(turn: Turn, args: list[str], rest: str) -> None:
    if len(args) != 3:
        await turn.say(
            'Usage: `edit PATH OLD NEW` (quote words with spaces: `edit a.txt "x y" z`)\n'
        )
        return
    shown, old_part, new_part = args[0], unescape(args[1]), unescape(args[2])

    def replace(old: str | None) -> str:
        if old is None:
            raise ToolError(f"{shown} does not exist (use `write` to create it)")
        if old_part not in old:
            raise ToolError(f"{old_part!r} does not occur in {shown}")
        return old.replace(old_part, new_part, 1)

    await _edit(turn, shown, replace, probe_only=False)


async def cmd_write(turn: Turn, args: list[str], rest: str) -> None:
    if len(args) < 2:
        await turn.say("Usage: `write PATH TEXT` (`\\n` makes a new line)\n")
        return
    text = unescape(" ".join(args[1:]))
    text = text if text.endswith("\n") else text + "\n"
    await _edit(turn, args[0], lambda old: text, probe_only=True)


async def cmd_run(turn: Turn, args: list[str], rest: str) -> None:
    if not args:
        await turn.say("Usage: `run COMMAND [ARGS...]`, e.g. `run echo hi`\n")
        return
    command, arguments = args[0], args[1:]
    label = shlex.join(args)
    exit_code: int | None = None
    signal: str | None = None
    output = ""
    async with turn.tool(
        f"Run {label}",
        kind="execute",
        raw_input={"command": command, "args": arguments, "cwd": turn.cwd},
    ) as call:
        await ask_permission(turn, call)
        try:
            result = await call.run(
                command, arguments, output_byte_limit=RUN_OUTPUT_LIMIT, fallback=True
            )
        except (AcpError, OSError) as error:
            raise ToolError(f"Could not start {command}: {error_text(error)}") from None
        exit_code, signal, output = result.exit_code, result.signal, result.output
        await call.update(
            raw_output={
                "exitCode": exit_code,
                "signal": result.signal,
                "truncated": result.truncated,
            }
        )
        if not result.ok:
            status = f"signal {result.signal}" if result.signal else f"exit code {exit_code}"
            raise ToolError(f"{label} failed ({status})")
    if call.status != "completed" and exit_code is None and not output:
        await turn.say(f"`{label}` did not run (see the failed tool call).\n")
        return
    where = "a client terminal" if turn.can_run_commands else "a local process (no client terminal)"
    status = "signal " + str(signal) if signal else f"exit code {exit_code}"
    await turn.say(f"`{label}` ran in {where} and finished with {status}.\n\n")
    await turn.say(fence(output) if output else "(no output)\n")
    await verbose_footer(turn)


async def cmd_plan(turn: Turn, args: list[str], rest: str) -> None:
    plan = await turn.plan(
        "Survey the session folder",
        "Count lines in text files",
        "Look for TODO markers",
        "Write a summary",
    )
    await plan.start(0)
    await turn.think("Listing the files under the session folder first.")
    files, cut = await asyncio.to_thread(walk, turn.cwd)
    await asyncio.sleep(STEP_DELAY)
    await plan.complete(0)

    await plan.start(1)
    await turn.think(f"{len(files)} files; counting their lines.")
    texts: list[str] = []
    for rel in files[:MAX_SEARCH_READS]:
        try:
            texts.append(
                await asyncio.to_thread(
                    Path(turn.cwd, rel).read_text, encoding="utf-8", errors="replace"
                )
            )
        except OSError:
            continue
    lines = sum(line_count(text) for text in texts)
    await asyncio.sleep(STEP_DELAY)
    await plan.complete(1)

    await plan.start(2)
    await turn.think(f"{lines} lines; now counting TODO markers.")
    todo = sum(len(re.findall(r"\bTODO\b", text)) for text in texts)
    await asyncio.sleep(STEP_DELAY)
    await plan.complete(2)

    await plan.start(3)
    await asyncio.sleep(STEP_DELAY)
    more = "+" if cut else ""
    await turn.say(
        f"The session folder has {len(files)}{more} text files with {lines} lines "
        f"and {todo} TODO marker{'s' if todo != 1 else ''}.\n"
    )
    await plan.complete(3)
    await verbose_footer(turn)


async def cmd_think(turn: Turn, args: list[str], rest: str) -> None:
    topic = rest or "nothing in particular"
    words = topic.split()
    for i in range(0, len(words), 3):
        await turn.think(" ".join(words[i : i + 3]) + " ")
    if turn.config.get("thought_level") == "high":
        await turn.think(f"\nThat was {plural(len(words), 'word')}. ")
        await turn.think("Thinking harder because thought_level is high.")
    await turn.say(
        "Those were thought chunks (`agent_thought_chunk`): clients show them apart "
        "from the answer.\n"
    )


async def cmd_mode(turn: Turn, args: list[str], rest: str) -> None:
    if not args:
        await turn.say(f"The mode is **{turn.mode}**. Switch with `mode ask` or `mode code`.\n")
        return
    try:
        await turn.set_mode(args[0].lower())
    except InvalidParams:
        await turn.say(f"There is no mode {args[0]!r}; the modes are `ask` and `code`.\n")
        return
    await turn.say(f"Switched to **{turn.mode}** mode.\n")


async def cmd_set(turn: Turn, args: list[str], rest: str) -> None:
    if len(args) != 2:
        await turn.say("Usage: `set OPTION VALUE`, e.g. `set model smart` or `set verbose on`\n")
        return
    option, raw = args
    value: str | bool = raw
    if option == "verbose":
        value = raw.lower() in ("on", "true", "yes", "1")
    try:
        await turn.set_option(option, value)
    except InvalidParams as error:
        await turn.say(f"Cannot set {option}: {error.message}.\n")
        return
    await turn.say(f"`{option}` is now `{turn.config.get(option)}`.\n")


async def cmd_status(turn: Turn, args: list[str], rest: str) -> None:
    def yes(flag: bool) -> str:
        return "yes" if flag else "no (falls back to the agent's disk/processes)"

    options = "\n".join(f"- `{k}` = `{v}`" for k, v in offered_options(turn).items())
    await turn.say(
        f"Session `{turn.session_id}` in `{turn.cwd}`, mode **{turn.mode}**.\n\n"
        f"Options:\n{options}\n\nClient capabilities:\n"
        f"- read files: {yes(turn.can_read_files)}\n"
        f"- write files: {yes(turn.can_write_files)}\n"
        f"- terminals: {yes(turn.can_run_commands)}\n"
        f"- forms (elicitation): {'yes' if turn.can_ask else 'no'}\n"
        f"\nTurns in this session so far: {turn.session.state.get('turns', 0)}\n"
    )


async def cmd_elicit(turn: Turn, args: list[str], rest: str) -> None:
    if not turn.can_ask:
        await turn.say("Your client does not take forms (`elicitation.form`), so I cannot ask.\n")
        return
    answer = await turn.ask(
        "Tell me a little about yourself",
        {
            "name": s.StringPropertySchema(title="Your name", min_length=1),
            "colour": s.StringPropertySchema(
                title="Favourite colour",
                enum=["red", "green", "blue", "yellow"],
                default="blue",
            ),
        },
        required=["name", "colour"],
        title="About you",
    )
    if answer.accepted and answer.problems:
        await turn.say("The answer did not match the form: " + "; ".join(answer.problems) + "\n")
    elif answer.accepted:
        name = answer.content.get("name", "stranger")
        colour = answer.content.get("colour", "no colour")
        await turn.say(f"Nice to meet you, {name}! {str(colour).capitalize()} is a fine colour.\n")
    elif answer.action == "decline":
        await turn.say("You declined the form. No problem.\n")
    else:
        await turn.say("The form was cancelled.\n")


async def cmd_stream(turn: Turn, args: list[str], rest: str) -> None:
    count = number_argument(args, int, 20, 1, MAX_STREAM_CHUNKS)
    if count is None:
        await turn.say(f"Usage: `stream N` with N from 1 to {MAX_STREAM_CHUNKS}\n")
        return
    for i in range(1, count + 1):
        await turn.say(f"chunk {i} of {count}\n")


async def cmd_slow(turn: Turn, args: list[str], rest: str) -> None:
    seconds = number_argument(args, float, 10.0, 0.0, MAX_SLOW_SECONDS)
    if seconds is None:
        await turn.say(f"Usage: `slow [SECONDS]` with SECONDS from 0 to {MAX_SLOW_SECONDS:g}\n")
        return
    ticks = max(1, round(seconds / SLOW_TICK))
    await turn.say(f"Working for {seconds:g} s. Cancel the turn to stop me early.\n")
    done = 0  # steps reported to the client
    try:
        async with turn.tool(f"Wait {seconds:g} s", kind="other") as call:
            for step in range(1, ticks + 1):
                await asyncio.sleep(seconds / ticks)
                await call.update(content=[f"{step * 100 // ticks}% ({step}/{ticks})"])
                done = step
    except asyncio.CancelledError:
        with contextlib.suppress(AcpError, RuntimeError):
            await turn.say(f"Stopped after {done} of {ticks} steps: the turn was cancelled.\n")
        raise
    await turn.say("Finished without being cancelled.\n")


async def cmd_usage(turn: Turn, args: list[str], rest: str) -> None:
    history = await turn.session.history()
    used = max(1, len(json.dumps(history)) // 4)
    size = 128_000
    cost = round(used * 0.000002, 6)
    await turn.report_usage(used, size, cost=cost)
    await turn.say(
        f"Sent `usage_update`: {used} of {size} tokens (estimated from this session's "
        f"history; there is no model), ${cost:.6f}.\n"
    )


async def cmd_title(turn: Turn, args: list[str], rest: str) -> None:
    if not rest:
        await turn.say("Usage: `title TEXT`\n")
        return
    await turn.set_title(rest)
    await turn.say(f"The session is now called “{rest}”.\n")


HANDLERS: dict[str, Handler] = {
    "help": cmd_help,
    "read": cmd_read,
    "search": cmd_search,
    "edit": cmd_edit,
    "write": cmd_write,
    "run": cmd_run,
    "plan": cmd_plan,
    "think": cmd_think,
    "mode": cmd_mode,
    "set": cmd_set,
    "status": cmd_status,
    "elicit": cmd_elicit,
    "stream": cmd_stream,
    "slow": cmd_slow,
    "usage": cmd_usage,
    "title": cmd_title,
}


async def chat(turn: Turn, text: str) -> None:
    """Not a command: a friendly streamed answer that echoes the text."""
    if turn.config.get("thought_level") == "high":
        await turn.think("This is not one of my commands, so I will echo it and explain them.")
    shown = text if len(text) <= 500 else text[:500] + "…"
    await turn.say("Hello! I am the acpwire demo agent: ")
    await turn.say("deterministic, offline, no model behind me.\n\n")
    await turn.say(f"You said: “{shown}”\n\n" if shown else "You sent an empty prompt.\n\n")
    if turn.config.get("model") == "smart":
        await turn.say(f"(Model `smart`: that is {plural(len(text.split()), 'word')}.)\n\n")
    await turn.say("Try one of these (or the same with a `/` in front): ")
    await turn.say(", ".join(f"`{c.name}`" for c in COMMANDS) + ".\n")
    await turn.say("`help` explains each of them.\n")
    await verbose_footer(turn)


async def handle(turn: Turn) -> None:
    turn.session.state["turns"] = int(turn.session.state.get("turns", 0)) + 1
    name, rest = parse(turn)
    if name is None:
        await chat(turn, rest)
        return
    await HANDLERS[name](turn, split_args(rest), rest)


# ---------------------------------------------------------------------- the app


def default_store_path() -> Path:
    """Where sessions are kept without ``--store`` or ``$ACPWIRE_STORE``:
    ``<user data dir>/acpwire-demo.sqlite3``.

    The user data dir honours ``$ACPWIRE_DATA_DIR`` (see
    :func:`acpwire.store.default_data_dir`).
    """
    return default_data_dir() / f"{APP_NAME}.sqlite3"


def build_app(
    store: SessionStore | str | os.PathLike[str] | bool | None = True, *, unstable: bool = False
) -> AgentApp:
    """A fresh demo agent app; ``store`` as for :class:`AgentApp` (a store URL or path, or
    True: ``$ACPWIRE_STORE``, else :func:`default_store_path`). ``unstable`` serves unstable
    ACP too: fork, archive, status and titles of sessions, MCP over ACP."""
    from importlib import metadata

    try:
        version = metadata.version("acpwire")
    except metadata.PackageNotFoundError:  # pragma: no cover - bare checkout
        version = "0"
    if store is True:
        store = store_from_env(default_store_path())
    app = AgentApp(
        APP_NAME,
        title="acpwire demo agent",
        version=version,
        store=store,
        v2=True,  # a client asking for the v2 draft gets v2; v1 clients get v1
        unstable=unstable,
        modes=[
            Mode("ask", "Ask", "Ask permission before every edit and command"),
            Mode("code", "Code", "Edit files and run commands without asking"),
        ],
        default_mode="ask",
        options=[
            Select(
                "model",
                "Model",
                [Choice("fast", "Fast", "Short answers"), Choice("smart", "Smart", "Chattier")],
                category="model",
            ),
            Select(
                "thought_level",
                "Thought level",
                [Choice("low", "Low"), Choice("high", "High", "Show more thoughts")],
                category="thought_level",
            ),
            Toggle("verbose", "Verbose", description="Show the session's settings after answers"),
        ],
    )
    app.prompt(handle)
    for command in COMMANDS:
        app.command(command.name, command.description, hint=command.hint)(handle)
    return app


USAGE = f"""\
usage: python -m acpwire.demo [--store URL] [--unstable]
       acp demo-agent [--store URL] [--unstable]

The acpwire demo agent: an ACP agent on stdin/stdout that shows every protocol
feature without a model. Type `help` to it for its commands (docs/demo.md).

options:
  --store URL   where sessions are kept: a SQLite file path, sqlite:///path,
                postgresql://user@host/db or memory: (default: ${STORE_ENV}, else
                {APP_NAME}.sqlite3 in $ACPWIRE_DATA_DIR or the user data folder)
  --unstable    serve unstable ACP too: session/fork, archive, status,
                set_title and MCP over ACP (docs/protocol-currency.md)
  -h, --help    show this help (on stderr: stdout is the protocol channel)
"""


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    # argparse writes "usage: " itself before the synopsis, in its error messages.
    synopsis = USAGE.split("\n\n", 1)[0].removeprefix("usage: ")
    parser = argparse.ArgumentParser(prog="acpwire.demo", add_help=False, usage=synopsis)
    parser.add_argument("-h", "--help", action="store_true")
    parser.add_argument("--store", metavar="URL")
    parser.add_argument("--unstable", action="store_true")
    args = list(argv)
    if args[:1] == ["demo-agent"]:  # launched as `acp demo-agent` through runpy
        args = args[1:]
    namespace = parser.parse_args(args)
    if namespace.help:
        sys.stderr.write(USAGE)
        raise SystemExit(0)
    return namespace


def _default_store_announced() -> Path:
    """The default store file; when its folder is new, say once on stderr where it is."""
    path = default_store_path()
    try:
        path.parent.mkdir(parents=True)
    except FileExistsError:
        return path
    sys.stderr.write(f"acpwire demo: created {path.parent} to keep sessions in {path.name}\n")
    return path


def main(argv: list[str] | None = None) -> None:
    """Serve the demo agent on stdio (``python -m acpwire.demo``, ``acp demo-agent``)."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    named = args.store or os.environ.get(STORE_ENV, "").strip()
    try:
        app = build_app(named or _default_store_announced(), unstable=args.unstable)
    except (ValueError, ImportError) as exc:  # a store URL that names nothing usable
        sys.stderr.write(f"acpwire demo agent: {exc}\n")
        raise SystemExit(2) from None
    app.run([])
