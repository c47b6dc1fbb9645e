"""What an agent may offer, in the main run: modes and config options in ``session/new``,
``session/load`` and ``session/list`` when advertised; and errors for the optional
methods it does not advertise.

A feature the agent does not offer makes its checks ``n/a``. ``session/load`` must replay
a finished turn before its answer, so it waits for the first ``--prompt`` turn.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from ..registry import Group
from ..wire import as_dict, as_list, dict_of, dicts, short
from .driver import Run
from .live import LATE_WATCH, NO_SESSION, TURN_CONTENT_UPDATES, Live

__all__ = [
    "CONFIG_OPTIONS",
    "GROUP",
    "LIST_CURSOR",
    "MODE_STATE",
    "SESSION_LIST",
    "SESSION_LOAD",
    "SESSION_OPTIONS",
    "SET_CONFIG_OPTION",
    "SET_MODE",
    "UNADVERTISED_METHODS",
    "UNKNOWN_CONFIG",
    "UNKNOWN_MODE",
    "config",
    "load",
    "modes",
    "session_list",
    "unadvertised",
]

GROUP = Group("agent", stage="main")
MODE_STATE = GROUP.check(
    "mode-state",
    "currentModeId is one of the offered modes",
    proves=("MODE-004",),
    needs=("modes",),
)
SET_MODE = GROUP.check(
    "set-mode",
    "session/set_mode with an offered mode succeeds",
    proves=("MODE-002",),
    needs=("modes",),
)
UNKNOWN_MODE = GROUP.check(
    "unknown-mode",
    "session/set_mode with an unknown mode is refused",
    proves=("MODE-003",),
    needs=("modes",),
)
CONFIG_OPTIONS = GROUP.check(
    "config-options",
    "a select option's current value is one of its values",
    proves=("CFG-010",),
    needs=("config",),
)
SET_CONFIG_OPTION = GROUP.check(
    "set-config-option",
    "session/set_config_option returns the complete list, the value changed",
    proves=("CFG-012",),
    needs=("config",),
)
UNKNOWN_CONFIG = GROUP.check(
    "unknown-config",
    "an unknown config option or value is refused",
    proves=("CFG-014",),
    needs=("config",),
)
SESSION_LOAD = GROUP.check(
    "session-load",
    "session/load replays the history before responding",
    proves=("SESS-006", "SESS-007"),
    needs=("loadSession", "turn"),
)
SESSION_LIST = GROUP.check(
    "session-list",
    "session/list answers a sessions array, filters by cwd, lists a prompted session",
    proves=("LIST-004", "LIST-005", "LIST-011"),
    needs=("list",),
)
LIST_CURSOR = GROUP.check(
    "list-cursor", "session/list refuses an invalid cursor", proves=("LIST-009",), needs=("list",)
)
UNADVERTISED_METHODS = GROUP.check(
    "unadvertised-methods",
    "optional methods not advertised are answered with errors",
    proves=("SESS-030",),
)

SESSION_OPTIONS = (
    MODE_STATE,
    SET_MODE,
    UNKNOWN_MODE,
    CONFIG_OPTIONS,
    SET_CONFIG_OPTION,
    UNKNOWN_CONFIG,
)
"""The checks of what ``session/new`` offers (judged in a second session)."""
REPLAY_UPDATES = TURN_CONTENT_UPDATES | {"user_message_chunk"}
"""Update kinds a session/load replay is made of."""
INVALID_CURSOR = "acp-check-invalid-cursor"
UNKNOWN_ID = "acp-check-unknown-id"


# -- modes and config options


async def modes(live: Live, run: Run, session_id: str, result: dict[str, Any]) -> None:
    offered = as_dict(result.get("modes"))
    if offered is None:
        return live.not_applicable((MODE_STATE, SET_MODE, UNKNOWN_MODE), "no modes offered")
    ids = [m.get("id") for m in dicts(offered.get("availableModes") or ())]
    current = offered.get("currentModeId")
    if current in ids:
        live.record(MODE_STATE, "pass", f"{current} of {', '.join(map(str, ids))}")
    else:
        live.fail(MODE_STATE, f"currentModeId {current!r} not in {ids!r}")
    target = next((i for i in ids if i != current), current)
    if target is None:
        live.record(SET_MODE, "skip", "no mode ids offered")
    else:
        answer = await run.call(
            "session/set_mode", {"sessionId": session_id, "modeId": target}, live.timeout
        )
        if answer.ok:
            live.record(SET_MODE, "pass", f"set {target}")
        else:
            live.fail(SET_MODE, f"set_mode {target!r}: {answer.describe()}")
    params = {"sessionId": session_id, "modeId": UNKNOWN_ID}
    what = f"set_mode {UNKNOWN_ID!r}"
    await live.must_refuse(run, UNKNOWN_MODE, "session/set_mode", params, what, live.timeout)


def select_values(option: dict[str, Any]) -> list[Any]:
    """The values of a select config option (flat or grouped)."""
    values: list[Any] = []
    for item in dicts(option.get("options") or ()):
        if "value" in item:
            values.append(item["value"])
        for sub in dicts(item.get("options") or ()):
            if "value" in sub:
                values.append(sub["value"])
    return values


async def config(live: Live, run: Run, session_id: str, result: dict[str, Any]) -> None:
    option_list = as_list(result.get("configOptions"))
    if option_list is None:
        return live.not_applicable(
            (CONFIG_OPTIONS, SET_CONFIG_OPTION, UNKNOWN_CONFIG), "no config options offered"
        )
    problems: list[str] = []
    for option in dicts(option_list):
        if option.get("type") == "select" and "currentValue" in option:
            values = select_values(option)
            if option["currentValue"] not in values:
                problems.append(
                    f"option {option.get('id')!r}: currentValue {option['currentValue']!r} "
                    f"is not one of {values!r}"
                )
    live.verdicts.verdict(CONFIG_OPTIONS, problems, f"{len(option_list)} options")
    await _set_config_option(live, run, session_id, option_list)
    params = {"sessionId": session_id, "configId": UNKNOWN_ID, "value": UNKNOWN_ID}
    what = f"set {UNKNOWN_ID}"
    await live.must_refuse(
        run, UNKNOWN_CONFIG, "session/set_config_option", params, what, live.timeout
    )


async def _set_config_option(
    live: Live, run: Run, session_id: str, option_list: list[object]
) -> None:
    target: dict[str, Any] | None = None
    new_value: Any = None
    for option in dicts(option_list):
        if option.get("type") == "select":
            others = [v for v in select_values(option) if v != option.get("currentValue")]
            if others:
                target, new_value = option, others[0]
                break
    if target is None:
        live.record(SET_CONFIG_OPTION, "skip", "no select option with a second value")
        return
    cid = target.get("id")
    answer = await run.call(
        "session/set_config_option",
        {"sessionId": session_id, "configId": cid, "value": new_value},
        live.timeout,
    )
    returned = as_list(dict_of(answer.result).get("configOptions"))
    if not answer.ok:
        live.fail(SET_CONFIG_OPTION, f"set {cid}={new_value}: {answer.describe()}")
    elif returned is None:
        live.fail(SET_CONFIG_OPTION, "the result has no configOptions list")
    else:
        before = {dict_of(o).get("id") for o in option_list}
        after = {dict_of(o).get("id"): dict_of(o) for o in returned}
        missing = [f"option {i!r} missing from the result" for i in before if i not in after]
        changed = after.get(cid)
        if changed is not None and changed.get("currentValue") != new_value:
            missing.append(
                f"{cid!r} currentValue is {changed.get('currentValue')!r}, expected {new_value!r}"
            )
        live.verdicts.verdict(
            SET_CONFIG_OPTION, missing, f"set {cid}={new_value}, {len(returned)} back"
        )


# -- optional session methods


async def load(live: Live, run: Run, caps: dict[str, Any], prompted: str | None) -> None:
    if caps.get("loadSession") is not True:
        live.record(SESSION_LOAD, "n/a", "loadSession not advertised")
        return
    if prompted is None or not run.alive or prompted not in run.sessions:
        live.record(SESSION_LOAD, "skip", "no session with a finished turn")
        return
    mark = run.mark()
    answer = await run.call(
        "session/load", {"sessionId": prompted, "cwd": live.cwd, "mcpServers": []}, live.timeout
    )
    if not answer.ok:
        live.fail(SESSION_LOAD, f"session/load: {answer.describe()}", "SESS-006")
        return
    response = run.response_to(answer.request_id, mark)
    if response is None:
        live.record(SESSION_LOAD, "skip", "response not found on the wire")
        return
    index = live.wire.entries.index(response)
    replayed = run.updates(prompted, mark, index)
    await asyncio.sleep(LATE_WATCH)
    late = run.updates(prompted, index + 1, kinds=REPLAY_UPDATES)
    problems: list[tuple[str, str]] = []
    if late:
        problems.append(
            (
                "SESS-007",
                f"{len(late)} replayed update(s) after the response: {', '.join(late[:3])}",
            )
        )
    if not replayed and not late:
        problems.append(("SESS-006", "nothing replayed for a session with a finished turn"))
    live.verdicts.verdict(
        SESSION_LOAD, problems, f"{len(replayed)} update(s) replayed before the response"
    )


async def session_list(live: Live, run: Run, caps: dict[str, Any], prompted: str | None) -> None:
    if not isinstance(dict_of(caps.get("sessionCapabilities")).get("list"), dict):
        live.not_applicable((SESSION_LIST, LIST_CURSOR), "sessionCapabilities.list not advertised")
        return
    if not run.alive and not await live.ready(run):
        return
    problems: list[tuple[str, str]] = []
    answer = await run.call("session/list", {}, live.timeout)
    if not answer.ok:
        problems.append(("LIST-004", f"session/list {{}}: {answer.describe()}"))
    elif as_list(dict_of(answer.result).get("sessions")) is None:
        problems.append(("LIST-004", "session/list {} has no sessions array"))
    found: dict[str, Any] = {}
    cursor: Any = None
    for _page in range(20):
        params: dict[str, Any] = {"cwd": live.cwd}
        if cursor is not None:
            params["cursor"] = cursor
        page = await run.call("session/list", params, live.timeout)
        sessions = as_list(dict_of(page.result).get("sessions"))
        if not page.ok or sessions is None:
            got = page.describe() if not page.ok else "no sessions array"
            problems.append(("LIST-004", f"session/list with cwd: {got}"))
            break
        for info in dicts(sessions):
            found[str(info.get("sessionId"))] = info.get("cwd")
        cursor = dict_of(page.result).get("nextCursor")
        if not cursor:
            break
    wrong = {sid: c for sid, c in found.items() if c != live.cwd}
    if wrong:
        problems.append(("LIST-011", f"cwd filter returned other folders: {short(wrong)}"))
    if prompted is not None and prompted not in found:
        problems.append(("LIST-011", f"the prompted session {prompted} is not listed for its cwd"))
    nowhere = f"/nonexistent/acp-check-{uuid.uuid4().hex}"
    empty = await run.call("session/list", {"cwd": nowhere}, live.timeout)
    if not empty.ok:
        problems.append(("LIST-005", f"session/list for an unused cwd: {empty.describe()}"))
    elif dict_of(empty.result).get("sessions") != []:
        got = short(dict_of(empty.result).get("sessions"))
        problems.append(("LIST-005", f"an unused cwd gave sessions={got}"))
    live.verdicts.verdict(SESSION_LIST, problems, f"{len(found)} session(s) listed for the cwd")
    params = {"cursor": INVALID_CURSOR}
    what = f"cursor {INVALID_CURSOR!r}"
    await live.must_refuse(run, LIST_CURSOR, "session/list", params, what, live.timeout)


async def unadvertised(live: Live, run: Run, caps: dict[str, Any]) -> None:
    session_caps = dict_of(caps.get("sessionCapabilities"))
    base: dict[str, Any] = {"sessionId": NO_SESSION, "cwd": live.cwd, "mcpServers": []}
    probes: list[tuple[str, dict[str, Any]]] = []
    if caps.get("loadSession") is not True:
        probes.append(("session/load", base))
    for name in ("list", "resume", "close", "delete"):
        if not isinstance(session_caps.get(name), dict):
            params = {} if name == "list" else {"sessionId": NO_SESSION}
            if name == "resume":
                params = base
            probes.append((f"session/{name}", params))
    if not isinstance(dict_of(caps.get("auth")).get("logout"), dict):
        probes.append(("logout", {}))
    if not probes:
        live.record(UNADVERTISED_METHODS, "n/a", "every optional method is advertised")
        return
    problems: list[str] = []
    for method, params in probes:
        if not run.alive and not await live.ready(run):
            break
        run.process.provoked.add(NO_SESSION)
        answer = await run.call(method, params, live.quick, owner=UNADVERTISED_METHODS.key)
        if answer.ok:
            problems.append(f"{method} succeeded without being advertised")
        elif not answer.answered:
            problems.append(f"{method}: {answer.describe()}")
    live.verdicts.verdict(
        UNADVERTISED_METHODS, problems, f"errors for {', '.join(m for m, _ in probes)}"
    )
