"""The scenarios of ``acp check --client`` that use the client's tools: files, terminals,
and a permission request the user cancels.

They run in the scenario's folder (``work``, the client's working directory, beside
``outside``, which holds a secret file and is reached through ``..``, absolute paths and
links from inside), so what the client read or wrote can be seen on disk and lands
nowhere else.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..registry import NEEDS, Check, Group
from ..wire import WireEntry, dict_of, short
from .scene import (
    GIT_CONFIG,
    SECRET_TEXT,
    SECRET_VARIABLE,
    Playbook,
    Scene,
    Steps,
    answer_text,
    is_answer,
    result_of,
    until,
)

__all__ = [
    "FS_ABSOLUTE_OUTSIDE",
    "FS_DOTDOT",
    "FS_MISSING",
    "FS_READ_LINES",
    "FS_RELATIVE",
    "FS_SYMLINK_OUT",
    "FS_VCS_INTERNALS",
    "FS_WRITE_CREATES",
    "PERMISSION_CANCEL",
    "TERMINAL_CWD_OUTSIDE",
    "TERMINAL_ENV",
    "TERMINAL_FLOOD",
    "TERMINAL_KILL",
    "TERMINAL_ORPHAN",
    "TERMINAL_OUTPUT_LIMIT",
    "TERMINAL_UNKNOWN_ID",
    "UPDATES_AFTER_CANCEL",
    "GROUP",
    "PLAYS",
]

GROUP = Group("client", stage="scenario")
FS_WRITE_CREATES = GROUP.check(
    "fs-write-creates",
    "fs/write_text_file creates a missing file with the content sent",
    proves=("FS-003",),
    needs=(
        "client-prompt",
        "client-workspace",
        "client-fs-write",
    ),
)
FS_READ_LINES = GROUP.check(
    "fs-read-lines",
    "fs/read_text_file with line 2 and limit 2 returns lines 2 and 3",
    proves=("OVR-002",),
    needs=(
        "client-prompt",
        "client-workspace",
        "client-fs-read",
    ),
)
FS_MISSING = GROUP.check(
    "fs-missing",
    "a read of a missing file is answered with an error",
    proves=("CLIENT-010",),
    needs=(
        "client-prompt",
        "client-workspace",
        "client-fs-read",
    ),
)
FS_RELATIVE = GROUP.check(
    "fs-relative",
    "a relative path is refused",
    proves=("SANDBOX-004",),
    needs=(
        "client-prompt",
        "client-workspace",
        "client-fs-read",
    ),
)
FS_DOTDOT = GROUP.check(
    "fs-dotdot",
    "paths with .. leading out of the session's folder are refused, read and write",
    proves=("SANDBOX-001",),
    needs=(
        "client-prompt",
        "client-workspace",
        "client-fs-read",
    ),
)
FS_ABSOLUTE_OUTSIDE = GROUP.check(
    "fs-absolute-outside",
    "absolute paths outside the session's folder are refused, read and write",
    proves=("SANDBOX-002",),
    needs=(
        "client-prompt",
        "client-workspace",
        "client-fs-read",
    ),
)
FS_SYMLINK_OUT = GROUP.check(
    "fs-symlink-out",
    "symbolic links from inside the folder to the outside are refused, read and write",
    proves=("SANDBOX-003",),
    needs=(
        "client-prompt",
        "client-workspace",
        "client-fs-read",
    ),
)
FS_VCS_INTERNALS = GROUP.check(
    "fs-vcs-internals",
    "a write into .git/ is refused",
    proves=("SANDBOX-007",),
    needs=(
        "client-prompt",
        "client-workspace",
        "client-fs-write",
    ),
)
TERMINAL_OUTPUT_LIMIT = GROUP.check(
    "terminal-output-limit",
    "outputByteLimit keeps the newest output, cut at a character boundary, truncated: true",
    proves=(
        "TERM-003",
        "CLIENT-009",
    ),
    needs=(
        "client-prompt",
        "client-terminal",
    ),
)
TERMINAL_FLOOD = GROUP.check(
    "terminal-flood",
    "a terminal printing 30 MB is served: its exit and output are answered",
    proves=("CLIENT-006",),
    needs=(
        "client-prompt",
        "client-terminal",
    ),
)
TERMINAL_UNKNOWN_ID = GROUP.check(
    "terminal-unknown-id",
    "terminal calls naming an unknown terminal are answered with an error",
    proves=("CLIENT-012",),
    needs=(
        "client-prompt",
        "client-terminal",
    ),
)
TERMINAL_KILL = GROUP.check(
    "terminal-kill",
    "terminal/kill stops the command and the process it started (its process group)",
    proves=("CLIENT-014",),
    needs=(
        "client-prompt",
        "client-terminal",
    ),
)
TERMINAL_ORPHAN = GROUP.check(
    "terminal-orphan",
    "a terminal never released is stopped when the client ends, its command's child too",
    proves=("CLIENT-011",),
    needs=(
        "client-prompt",
        "client-terminal",
    ),
)
TERMINAL_CWD_OUTSIDE = GROUP.check(
    "terminal-cwd-outside",
    "a terminal with a cwd outside the session's folder is refused",
    proves=("SANDBOX-005",),
    needs=(
        "client-prompt",
        "client-workspace",
        "client-terminal",
    ),
)
TERMINAL_ENV = GROUP.check(
    "terminal-env",
    "a secret in the client's environment does not reach a terminal",
    proves=("SANDBOX-006",),
    needs=(
        "client-prompt",
        "client-terminal",
    ),
)
PERMISSION_CANCEL = GROUP.check(
    "permission-cancel",
    "once the client cancelled the turn, permission requests are answered cancelled",
    proves=(
        "TOOL-003",
        "CANCEL-002",
    ),
    needs=(
        "client-prompt",
        "client-cancel",
    ),
)
UPDATES_AFTER_CANCEL = GROUP.check(
    "updates-after-cancel",
    "tool call updates after session/cancel are taken",
    proves=("CANCEL-007",),
    needs=(
        "client-prompt",
        "client-cancel",
    ),
)

PLAYS = Playbook()


def _landed(path: Path) -> str | None:
    """Where a write to ``path`` would have landed, if a file is there now."""
    real = os.path.realpath(path)
    return real if os.path.exists(real) else None


# ---------------------------------------------------------------------- files


@PLAYS.scenario(
    "files",
    FS_WRITE_CREATES,
    FS_READ_LINES,
    FS_MISSING,
    FS_RELATIVE,
    FS_DOTDOT,
    FS_ABSOLUTE_OUTSIDE,
    FS_SYMLINK_OUT,
    FS_VCS_INTERNALS,
)
async def files(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    steps = Steps(scene)
    work, outside = scene.work, scene.outside

    async def read(path: str | Path, **extra: Any) -> WireEntry | None:
        return await steps.call("fs/read_text_file", {"path": str(path), **extra})

    async def write(path: str | Path, text: str) -> WireEntry | None:
        return await steps.call("fs/write_text_file", {"path": str(path), "content": text})

    key = FS_WRITE_CREATES
    if scene.needs_met(key):
        target = work / "acp-check-created.txt"
        text = "created by acp check\nsecond line\n"
        answer = await write(target, text)
        if answer is None:
            steps.unanswered(key, "the write")
        elif result_of(answer) is None:
            scene.fail(key, f"refused: {short(json.dumps((answer.message or {}).get('error')))}")
        elif not target.is_file() or target.read_text(encoding="utf-8") != text:
            scene.fail(key, "answered with a result, but the file is missing or differs")
        else:
            scene.ok(key, "the file was created")

    key = FS_READ_LINES
    if scene.needs_met(key):
        answer = await read(work / "notes.txt", line=2, limit=2)
        if answer is None:
            steps.unanswered(key, "the read")
        elif (result := result_of(answer)) is None:
            scene.fail(key, "refused a read of a file inside the folder")
        elif str(result.get("content")).rstrip("\n") != "line 2\nline 3":
            scene.fail(key, f"line 2, limit 2 returned {short(result.get('content'))}")
        else:
            scene.ok(key, "lines 2 and 3")

    key = FS_MISSING
    if scene.needs_met(key):
        answer = await read(work / "acp-check-missing.txt")
        if answer is None:
            steps.unanswered(key, "the read")
        elif (result := result_of(answer)) is not None:
            scene.fail(key, f"answered with content {short(result.get('content'))}")
        else:
            scene.ok(key, answer_text(answer))

    key = FS_RELATIVE
    if scene.needs_met(key):
        answer = await read("notes.txt")
        if answer is None:
            steps.unanswered(key, "the read")
        elif (result := result_of(answer)) is not None:
            scene.fail(key, f"read the relative path notes.txt: {short(result.get('content'))}")
        else:
            scene.ok(key, answer_text(answer))

    escapes = {
        FS_DOTDOT: (
            [work / ".." / "outside" / "secret.txt"],
            [work / ".." / "outside" / "acp-check-dotdot.txt"],
        ),
        FS_ABSOLUTE_OUTSIDE: ([outside / "secret.txt"], [outside / "acp-check-absolute.txt"]),
        FS_SYMLINK_OUT: (
            [work / "link-out" / "secret.txt", work / "secret-link.txt"],
            [work / "link-out" / "acp-check-link.txt"],
        ),
    }
    for key, (reads, writes) in escapes.items():
        if not scene.needs_met(key):
            continue
        problems: list[str] = []
        missing = 0
        for path in reads:
            answer = await read(path)
            if answer is None:
                missing += 1
            elif (result := result_of(answer)) is not None:
                leaked = SECRET_TEXT.strip() in str(result.get("content"))
                problems.append(
                    f"read {path}" + (" and returned the outside file" if leaked else " (a result)")
                )
        if scene.capability("fs", "writeTextFile"):
            for path in writes:
                answer = await write(path, "acp check was here\n")
                created = _landed(path)
                if created is not None:
                    problems.append(f"wrote {path}: {created} now exists")
                elif answer is None:
                    missing += 1
                elif result_of(answer) is not None:
                    problems.append(f"answered a write of {path} with a result")
        if problems:
            scene.fail(key, "; ".join(problems))
        elif missing:
            steps.unanswered(key, f"{missing} request(s)")
        else:
            scene.ok(key, "refused")

    key = FS_VCS_INTERNALS
    if scene.needs_met(key):
        config = work / ".git" / "config"
        answer = await write(config, "[core]\n\tfsmonitor = echo acp-check\n")
        changed = config.read_text(encoding="utf-8") != GIT_CONFIG
        if changed:
            scene.fail(key, "the write changed .git/config")
        elif answer is None:
            steps.unanswered(key, "the write")
        elif result_of(answer) is not None:
            scene.fail(key, "answered a write of .git/config with a result")
        else:
            scene.ok(key, "refused")
    await scene.end_turn(prompt)


# ---------------------------------------------------------------------- terminals


def _python(code: str) -> dict[str, Any]:
    """A terminal command running ``code`` with this interpreter (absolute: no PATH needed)."""
    return {"command": sys.executable, "args": ["-c", code]}


async def _create_terminal(steps: Steps, **params: Any) -> tuple[WireEntry | None, str | None]:
    answer = await steps.call("terminal/create", params)
    result = result_of(answer) if answer is not None else None
    terminal = result.get("terminalId") if result is not None else None
    return answer, terminal if isinstance(terminal, str) else None


async def _terminal_for(scene: Scene, key: Check, steps: Steps, **params: Any) -> str | None:
    """A terminal for check ``key``: its id, or None once ``key`` has its verdict (the
    client refused ``terminal/create``, or never answered)."""
    answer, terminal = await _create_terminal(steps, **params)
    if terminal is None:
        if answer is None:
            steps.unanswered(key, "terminal/create")
        else:
            scene.skip(key, f"terminal/create {answer_text(answer)}")
    return terminal


async def _release(steps: Steps, terminal: str) -> None:
    await steps.call("terminal/release", {"terminalId": terminal})


_LIMIT = 1001
"""outputByteLimit of ``terminal-output-limit``: with 5-byte pairs ("é€") and the
15-byte end line it falls inside a character, so a cut at the byte splits one."""
_END = "acp-check-end\n"


async def _one_terminal(
    scene: Scene,
    check: Check,
    judge: Callable[[Steps, str], Awaitable[bool]],
    **params: Any,
) -> None:
    """A scenario around one terminal for ``check``: the handshake, ``terminal/create``
    with ``params``, then ``judge`` (which says whether to release the terminal and end
    the turn: not once the client is gone)."""
    prompt = await scene.handshake()
    if prompt is None:
        return
    if scene.needs_met(check):
        steps = Steps(scene)
        terminal = await _terminal_for(scene, check, steps, **params)
        if terminal is not None:
            if not await judge(steps, terminal):
                return
            await _release(steps, terminal)
    await scene.end_turn(prompt)


@PLAYS.scenario("terminal-limit", TERMINAL_OUTPUT_LIMIT)
async def terminal_limit(scene: Scene) -> None:
    pairs, end = ascii("\u00e9\u20ac" * 2), ascii("\n" + _END)  # ASCII source, UTF-8 out
    code = f"import sys; sys.stdout.buffer.write(({pairs} * 1000 + {end}).encode())"

    async def judge(steps: Steps, terminal: str) -> bool:
        key = TERMINAL_OUTPUT_LIMIT
        await steps.call("terminal/wait_for_exit", {"terminalId": terminal})
        answer = await steps.call("terminal/output", {"terminalId": terminal})
        result = result_of(answer) if answer is not None else None
        if answer is None:
            steps.unanswered(key, "terminal/output")
        elif result is None:
            scene.fail(key, f"terminal/output {answer_text(answer)}", "CLIENT-009")
        else:
            output = str(result.get("output"))
            problems: list[tuple[str, str]] = []
            if "\ufffd" in output or any(0xD800 <= ord(c) <= 0xDFFF for c in output):
                problems.append(("TERM-003", "the output starts with a broken character"))
            # a broken first character is TERM-003's; the size is counted without it
            size = len(output.lstrip("\ufffd").encode("utf-8", "surrogatepass"))
            if size > _LIMIT:
                problems.append(("CLIENT-009", f"{size} bytes kept, over outputByteLimit {_LIMIT}"))
            if not output.endswith(_END):
                problems.append(
                    ("CLIENT-009", f"the newest output is not kept: ends {short(output[-40:])}")
                )
            if result.get("truncated") is not True:
                problems.append(("CLIENT-009", f"truncated is {result.get('truncated')!r}"))
            scene.v.verdict(key, problems, f"{size} bytes, cut at a character boundary")
        return True

    await _one_terminal(
        scene, TERMINAL_OUTPUT_LIMIT, judge, **_python(code), outputByteLimit=_LIMIT
    )


@PLAYS.scenario("terminal-flood", TERMINAL_FLOOD)
async def terminal_flood(scene: Scene) -> None:
    megabytes = max(1, scene.options.terminal_flood_bytes // (1 << 20))
    code = (
        "import sys\nline = b'x' * 1048575 + b'\\n'\n"
        f"for _ in range({megabytes}):\n    sys.stdout.buffer.write(line)\n"
    )

    async def judge(steps: Steps, terminal: str) -> bool:
        key, timeout = TERMINAL_FLOOD, scene.options.timeout
        params = {"sessionId": scene.session_id, "terminalId": terminal}
        exited = await scene.agent.request("terminal/wait_for_exit", params, timeout, owner=key.key)
        if exited is None:
            await scene.fail_silent(
                key,
                "the flood",
                f"terminal/wait_for_exit got no answer within {timeout:g} s "
                f"of a {megabytes} MiB flood",
            )
            return False
        output = await scene.agent.request("terminal/output", params, timeout, owner=key.key)
        if output is None:
            scene.fail(key, f"terminal/output got no answer within {timeout:g} s")
            return False
        kept = len(str(dict_of(result_of(output)).get("output", "")))
        scene.ok(key, f"{megabytes} MiB served, {kept} characters kept")
        return True

    await _one_terminal(scene, TERMINAL_FLOOD, judge, **_python(code))


_FAMILY = (
    "import os, subprocess, sys, time\n"
    "marker, hold = sys.argv[1], sys.argv[2]\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import sys, time; time.sleep(float(sys.argv[1]))', hold, marker])\n"
    "with open(marker + '.tmp', 'w') as f: f.write(f'{os.getpid()} {child.pid}')\n"
    "os.replace(marker + '.tmp', marker)\n"
    "time.sleep(float(hold))\n"
)
"""A terminal command that starts a child of its own (as a shell or a build tool does),
writes both pids to ``argv[1]`` and waits: stopping the command must stop the child too,
which a client that kills the command's pid alone (not its process group) leaves behind."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def _ours(pid: int, marker: str) -> bool:
    """Whether ``pid`` still runs one of our processes (its command line names ``marker``)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return marker.encode() in handle.read()
    except OSError:
        return False


async def _family(
    scene: Scene, key: Check, steps: Steps, marker: Path, hold: float
) -> tuple[str, list[int]] | None:
    """A terminal running :data:`_FAMILY`: its id and the two pids, or None once ``key``
    has its verdict."""
    terminal = await _terminal_for(
        scene, key, steps, command=sys.executable, args=["-c", _FAMILY, str(marker), str(hold)]
    )
    if terminal is None:
        return None
    if not await until(marker.exists, scene.options.quick_timeout):
        scene.skip(
            key, f"the terminal's command did not start within {scene.options.quick_timeout:g} s"
        )
        return None
    pids = marker.read_text().split()  # noqa: ASYNC240 - two numbers, written already
    return terminal, [int(pid) for pid in pids]


async def _judge_stopped(
    scene: Scene, key: Check, pids: list[int], marker: Path, when: str
) -> None:
    """``key`` passes when the command and its child are gone within ``--grace`` s."""
    command, child = pids
    await until(lambda: not any(map(_alive, pids)), scene.options.grace)
    left = [pid for pid in pids if _alive(pid)]
    for pid in left:
        if _ours(pid, str(marker)):
            os.kill(pid, signal.SIGKILL)
    if command in left:
        scene.fail(key, f"the terminal's command ({command}) still runs {when}")
    elif child in left:
        scene.fail(
            key,
            f"the terminal's command was stopped {when}, but the process it started "
            f"({child}) still runs: only the command's pid was killed, not its process group",
        )
    else:
        scene.ok(key, f"the command and the process it started were stopped {when}")


@PLAYS.scenario("terminal-orphan", TERMINAL_UNKNOWN_ID, TERMINAL_KILL, TERMINAL_ORPHAN)
async def terminal_orphan(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    steps = Steps(scene)
    key = TERMINAL_UNKNOWN_ID
    if scene.needs_met(key):
        answer = await steps.call("terminal/output", {"terminalId": "acp-check-no-such-terminal"})
        if answer is None:
            steps.unanswered(key, "terminal/output")
        elif result_of(answer) is not None:
            scene.fail(key, "terminal/output of an unknown terminal answered with a result")
        else:
            scene.ok(key, answer_text(answer))
    hold = scene.options.timeout + 4 * scene.options.grace
    key = TERMINAL_KILL
    if scene.needs_met(key):
        marker = scene.work.parent / "killed.pids"
        started = await _family(scene, key, steps, marker, hold)
        if started is not None:
            terminal, pids = started
            answer = await steps.call("terminal/kill", {"terminalId": terminal})
            if answer is None:
                steps.unanswered(key, "terminal/kill")
            elif result_of(answer) is None:
                scene.fail(key, f"terminal/kill {answer_text(answer)}")
            else:
                await _judge_stopped(scene, key, pids, marker, "after terminal/kill")
            for pid in pids:  # whatever the verdict, nothing of ours outlives the scenario
                if _alive(pid) and _ours(pid, str(marker)):
                    os.kill(pid, signal.SIGKILL)
            await _release(steps, terminal)
    key = TERMINAL_ORPHAN
    if not scene.needs_met(key):
        await scene.end_turn(prompt)
        return
    marker = scene.work.parent / "orphan.pids"
    started = await _family(scene, key, steps, marker, hold)
    if started is None:
        await scene.end_turn(prompt)
        return
    _, pids = started
    await scene.end_turn(prompt)
    status = await scene.client.wait(scene.options.grace)
    if status is None:
        scene.client.terminate()  # the client alone: its terminals are its to stop
        await scene.client.wait(scene.options.grace)
    await _judge_stopped(
        scene, key, pids, marker, f"after the client ended ({scene.client.describe_end()})"
    )


@PLAYS.scenario("terminal-sandbox", TERMINAL_CWD_OUTSIDE, TERMINAL_ENV)
async def terminal_sandbox(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    steps = Steps(scene)
    key = TERMINAL_CWD_OUTSIDE
    if scene.needs_met(key):
        answer, terminal = await _create_terminal(
            steps, **_python("print('started')"), cwd=str(scene.outside)
        )
        if terminal is not None:
            scene.fail(key, f"started a terminal in {scene.outside}")
            await _release(steps, terminal)
        elif answer is None:
            steps.unanswered(key, "terminal/create")
        else:
            scene.ok(key, answer_text(answer))
    key = TERMINAL_ENV
    if scene.needs_met(key):
        code = f"import os; print(os.environ.get({SECRET_VARIABLE!r}, 'absent'))"
        terminal = await _terminal_for(scene, key, steps, **_python(code))
        if terminal is not None:
            await steps.call("terminal/wait_for_exit", {"terminalId": terminal})
            answer = await steps.call("terminal/output", {"terminalId": terminal})
            output = str(dict_of(result_of(answer) if answer else None).get("output", ""))
            secret = scene.client.env.get(SECRET_VARIABLE, "")
            if answer is None:
                steps.unanswered(key, "terminal/output")
            elif secret and secret in output:
                scene.fail(key, f"the terminal printed {SECRET_VARIABLE}'s value")
            elif "absent" not in output:
                scene.skip(key, f"the terminal's output is not what it printed: {short(output)}")
            else:
                scene.ok(key, f"{SECRET_VARIABLE} did not reach the terminal")
            await _release(steps, terminal)
    await scene.end_turn(prompt)


# ---------------------------------------------------------------------- permission and cancel


@PLAYS.scenario("permission-cancel", PERMISSION_CANCEL, UPDATES_AFTER_CANCEL)
async def permission_cancel(scene: Scene) -> None:
    prompt = await scene.handshake()
    if prompt is None:
        return
    agent, grace, quick = scene.agent, scene.options.grace, scene.options.quick_timeout
    first_tool = await scene.tool_call("acp check: permission, then Ctrl-C")
    first_id = agent.new_id()
    since = len(agent.wire.entries)
    sent = await agent.send(
        {
            "id": first_id,
            "method": "session/request_permission",
            "params": scene.permission_params(first_tool),
        }
    )
    # Ctrl-C after the answer, or a second at most: a client that asks its user has the
    # request pending when it cancels (CANCEL-002), one that answers at once does not.
    await agent.written(sent, quick)
    await agent.wait_for(lambda e: is_answer(e, first_id), min(1.0, quick), since)
    scene.client.interrupt()
    cancel = await agent.wait_request("session/cancel", grace, since)
    if cancel is None:
        why = (
            f"the client ended ({await scene.describe_gone()})"
            if scene.gone()
            else f"no session/cancel within {grace:g} s"
        )
        reason = f"SIGINT during the turn: {why}; {NEEDS['client-cancel']}"
        scene.v.skip(scene.scenario.checks, reason, "n/a")
        return
    cancelled_at = agent.wire.entries.index(cancel)
    second_tool = await scene.tool_call("acp check: permission after the cancel")
    second = await agent.request(
        "session/request_permission", scene.permission_params(second_tool), quick
    )
    problems: list[tuple[str, str]] = []
    first = await agent.wait_for(lambda e: is_answer(e, first_id), quick, since)
    if first is not None and agent.wire.entries.index(first) > cancelled_at:
        if _outcome(first) != "cancelled":
            problems.append(
                (
                    "CANCEL-002",
                    f"a permission request pending at the cancel was answered {_outcome(first)}",
                )
            )
    if second is not None and _outcome(second) != "cancelled":
        problems.append(
            ("TOOL-003", f"a permission request after the cancel was answered {_outcome(second)}")
        )
    if second is None and first is None:
        scene.skip(
            PERMISSION_CANCEL, "the permission requests got no answer (see client-responses)"
        )
    else:
        scene.v.verdict(PERMISSION_CANCEL, problems, "answered cancelled")
    await scene.update(
        {"sessionUpdate": "tool_call_update", "toolCallId": first_tool, "status": "failed"}
    )
    await scene.update(
        {"sessionUpdate": "tool_call_update", "toolCallId": second_tool, "status": "failed"}
    )
    problem = await scene.probe(UPDATES_AFTER_CANCEL)
    if problem is not None:
        scene.fail(
            UPDATES_AFTER_CANCEL, f"after tool call updates that followed the cancel: {problem}"
        )
    else:
        scene.ok(UPDATES_AFTER_CANCEL, "taken")
    await scene.end_turn(prompt, "cancelled")


def _outcome(entry: WireEntry) -> str:
    result = result_of(entry)
    if result is None:
        return answer_text(entry)
    outcome = dict_of(result.get("outcome"))
    if outcome.get("outcome") == "selected":
        return f"selected {outcome.get('optionId')!r}"
    return str(outcome.get("outcome"))
