"""Payloads v1 and the v2 draft both carry, translated between their models (hand-written).

Most payloads have the same wire shape in both versions (content blocks, plan entries,
permission options, usage, notices, session info): :func:`to_v1` and :func:`to_v2`
carry them across through their JSON. A few differ and are translated here, from the
two pinned schemas:

* config options: v2 names an option ``configId`` (v1 ``id``) and a group ``groupId``
  (v1 ``group``);
* slash commands: v2's input is typed (``{"type": "text", "hint"}``), v1's is the bare
  ``{"hint"}``;
* diffs: v2's name the paths a tool changed (``changes``) with an optional patch, v1's
  carry one file's old and new text. v1 -> v2 gives a ``modify`` (or ``add``) change and
  a unified-diff patch; v2 -> v1 keeps the diff whole as ``UnknownToolCallContent``;
* auth methods: v2's ``methodId`` and an env list, v1's ``id`` and an env mapping.

Nothing here does I/O.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any, TypeVar, cast, overload

import msgspec

from ... import schema as s
from ...schema import UNSET, UnsetType, v2

T = TypeVar("T")

__all__ = [
    "auth_method_to_v1",
    "auth_method_to_v2",
    "command_to_v1",
    "command_to_v2",
    "config_options_to_v1",
    "config_options_to_v2",
    "plan_to_v2",
    "session_update_to_v2",
    "to_v1",
    "to_v2",
    "tool_call_to_v2",
    "tool_content_to_v1",
    "tool_content_to_v2",
]


@overload
def to_v1(value: Any, model: type[T]) -> T: ...
@overload
def to_v1(value: Any, model: Any) -> Any: ...  # a union: no class to name the result
def to_v1(value: Any, model: Any) -> Any:
    """A v2 value as the v1 ``model`` of the same wire shape (through its JSON)."""
    return s.convert(s.to_json(value), model)


@overload
def to_v2(value: Any, model: type[T]) -> T: ...
@overload
def to_v2(value: Any, model: Any) -> Any: ...
def to_v2(value: Any, model: Any) -> Any:
    """A v1 value as the v2 ``model`` of the same wire shape (through its JSON)."""
    return s.convert(s.to_json(value), model)


def _renamed(raw: Any, old: str, new: str) -> Any:
    """``raw`` (plain JSON) with key ``old`` renamed ``new``, at any depth."""
    if isinstance(raw, dict):
        items = cast("dict[str, Any]", raw).items()
        return {(new if k == old else k): _renamed(v, old, new) for k, v in items}
    if isinstance(raw, list):
        return [_renamed(v, old, new) for v in cast("list[object]", raw)]
    return raw


def config_options_to_v1(options: Iterable[v2.SessionConfigOption]) -> list[s.SessionConfigOption]:
    raw = _renamed(_renamed(s.to_json(list(options)), "configId", "id"), "groupId", "group")
    return s.convert(raw, list[s.SessionConfigOption])


def config_options_to_v2(options: Iterable[s.SessionConfigOption]) -> list[v2.SessionConfigOption]:
    raw: list[Any] = s.to_json(list(options))
    for option in raw:
        if isinstance(option, dict) and "id" in option:
            fields = cast("dict[str, Any]", option)
            fields["configId"] = fields.pop("id")
    return s.convert(_renamed(raw, "group", "groupId"), list[v2.SessionConfigOption])


def command_to_v1(command: v2.AvailableCommand) -> s.AvailableCommand:
    raw: dict[str, Any] = s.to_json(command)
    given: object = raw.get("input")
    hint = cast("dict[str, object]", given).get("hint") if isinstance(given, dict) else None
    return s.AvailableCommand(
        name=str(raw.get("name", "")),
        description=str(raw.get("description", "")),
        input=s.UnstructuredCommandInput(hint=hint) if isinstance(hint, str) else UNSET,
    )


def command_to_v2(command: s.AvailableCommand) -> v2.Command:
    given = command.input
    hint = getattr(given, "hint", None) if not isinstance(given, UnsetType) else None
    return v2.Command(
        name=command.name,
        description=command.description,
        input=v2.TextCommandInput(hint=hint) if isinstance(hint, str) else UNSET,
    )


def tool_content_to_v1(item: v2.ToolCallContent) -> s.ToolCallContent:
    raw = s.to_json(item)
    try:
        return cast("s.ToolCallContent", s.convert(raw, s.ToolCallContent))  # type: ignore[arg-type]
    except msgspec.ValidationError:
        # A v2 diff names paths and carries no text: kept whole, as v1 keeps what it
        # does not know.
        return s.UnknownToolCallContent(raw.get("type"), raw)


def tool_content_to_v2(item: s.ToolCallContent) -> v2.ToolCallContent:
    if isinstance(item, s.Diff):
        old = item.old_text if isinstance(item.old_text, str) else None
        change: v2.DiffChange = (
            v2.DiffAdd(path=item.path) if old is None else v2.DiffModify(path=item.path)
        )
        lines = difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            item.new_text.splitlines(keepends=True),
            "/dev/null" if old is None else f"a{item.path}",
            f"b{item.path}",
        )
        return v2.Diff(
            changes=[change], patch=v2.DiffPatch(format="git_patch", text="".join(lines))
        )
    raw = s.to_json(item)
    try:
        return cast("v2.ToolCallContent", s.convert(raw, v2.ToolCallContent))  # type: ignore[arg-type]
    except msgspec.ValidationError:
        return v2.UnknownToolCallContent(raw.get("type"), raw)


def auth_method_to_v1(method: v2.AuthMethod) -> s.AuthMethod | None:
    if isinstance(method, v2.AuthMethodAgent):
        return s.AuthMethodAgent(
            id=method.method_id, name=method.name, description=method.description
        )
    if isinstance(method, v2.AuthMethodTerminal):
        return s.AuthMethodTerminal(
            id=method.method_id,
            name=method.name,
            description=method.description,
            args=method.args,
            env=UNSET
            if isinstance(method.env, UnsetType)
            else {e.name: e.value for e in method.env},
        )
    return None


def auth_method_to_v2(method: s.AuthMethod) -> v2.AuthMethod | None:
    if isinstance(method, s.AuthMethodAgent):
        return v2.AuthMethodAgent(
            method_id=method.id, name=method.name, description=method.description
        )
    if isinstance(method, s.AuthMethodTerminal):
        env = method.env
        return v2.AuthMethodTerminal(
            method_id=method.id,
            name=method.name,
            description=method.description,
            args=method.args,
            env=UNSET
            if isinstance(env, UnsetType)
            else [v2.EnvVariable(name=k, value=v) for k, v in env.items()],
        )
    return None  # v1's env-var methods (unstable) have no v2 form


def plan_to_v2(plan: s.Plan, plan_id: str) -> v2.PlanUpdate:
    """A v1 plan (the whole list, each time) as v2's ``plan_update`` of one plan id."""
    entries = [to_v2(e, v2.PlanEntry) for e in plan.entries]
    return v2.PlanUpdate(plan=v2.PlanItems(plan_id=plan_id, entries=entries))


def tool_call_to_v2(update: s.ToolCallUpdate | s.ToolCall) -> v2.ToolCallProgress:
    """A v1 ``tool_call`` or ``tool_call_update`` as v2's ``tool_call_update`` (which
    creates the tool call when its id is new)."""
    raw: dict[str, Any] = s.to_json(update)
    raw.pop("sessionUpdate", None)
    content = raw.pop("content", UNSET)
    call = s.convert(raw, v2.ToolCallProgress)
    if isinstance(content, list) and isinstance(update.content, list):
        items = [tool_content_to_v2(i) for i in update.content]
        call = msgspec.structs.replace(call, content=items)
    elif content is None:
        call = msgspec.structs.replace(call, content=None)
    return call


def session_update_to_v2(update: s.SessionUpdate, message_id: str) -> v2.SessionUpdate | None:
    """A v1 update as v2 says it, or None where v2 has no such update (``current_mode_update``:
    v2 has modes only as the ``mode`` config option, which acpwire's apps mirror) or the
    update is one acpwire does not know.

    ``message_id`` is used for a message chunk that carries none (v2 requires one).
    """
    if isinstance(update, (s.UserMessageChunk, s.AgentMessageChunk, s.AgentThoughtChunk)):
        given = update.message_id
        mid = given if isinstance(given, str) else message_id
        content = to_v2(update.content, v2.ContentBlock)
        if isinstance(update, s.UserMessageChunk):
            return v2.UserMessageChunk(message_id=mid, content=content, meta=update.meta)
        if isinstance(update, s.AgentMessageChunk):
            return v2.AgentMessageChunk(message_id=mid, content=content, meta=update.meta)
        return v2.AgentThoughtChunk(message_id=mid, content=content, meta=update.meta)
    if isinstance(update, (s.ToolCallStart, s.ToolCallProgress)):
        return tool_call_to_v2(update)
    if isinstance(update, s.PlanUpdate):
        return plan_to_v2(update, "plan")
    if isinstance(update, s.AvailableCommandsUpdate):
        return v2.AvailableCommandsUpdate(
            available_commands=[command_to_v2(c) for c in update.available_commands]
        )
    if isinstance(update, s.ConfigOptionUpdate):
        return v2.ConfigOptionUpdate(config_options=config_options_to_v2(update.config_options))
    if isinstance(update, (s.CurrentModeUpdate, s.UnknownSessionUpdate)):
        return None  # nothing unknown goes out: strict in what we send
    try:  # same shape in both: session info, usage, notices, ...
        return cast("v2.SessionUpdate", s.convert(s.to_json(update), v2.SessionUpdate))  # type: ignore[arg-type]
    except msgspec.ValidationError:
        return None
