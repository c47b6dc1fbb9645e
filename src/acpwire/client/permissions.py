"""Permission policies: how a client answers ``session/request_permission``.

Spec (tool-calls.mdx, "Requesting Permission"): the agent sends the tool call and a
list of options, each with an ``optionId`` and a ``kind`` (``allow_once``,
``allow_always``, ``reject_once``, ``reject_always``); the client answers
``{"outcome": "selected", "optionId": ...}`` or, once it has sent ``session/cancel``
for the turn, ``{"outcome": "cancelled"}`` (TOOL-003, CANCEL-002; the toolkit client
does the latter itself, policies never have to).

SDK policy (not spec text): a policy is an async callable taking a
:class:`PermissionRequest` and returning a :data:`PermissionOutcome`. Everything
fails closed: :class:`RejectAll` is the default, a policy that raises or picks an
option the agent did not offer is answered with a reject option, and when the agent
offered no reject option the answer is ``cancelled``.

The toolkit client also asks its policy itself, before a write the sandbox will not make
unasked (``.env``, an executable file: :class:`~acpwire.sandbox.NeedsPermission`). Such a
request has ``concern`` set and offers one ``allow_once`` and one ``reject_once`` option;
its tool call (kind ``edit``) names the file and carries the new text as a diff.
"Allow everything the agent asks" is not the user allowing that file, so
:class:`AllowAll` rejects these unless built with ``sensitive_writes=True``; an
:class:`AskUser` callback or a :class:`Rules` rule matching the file decides them like
any other request.

* :class:`RejectAll` / :class:`AllowAll`: non-interactive.
* :class:`AskUser`: an interactive callback (sync or async) that returns an option id,
  an outcome, or ``None`` for "dismissed" (answered ``cancelled``).
* :class:`Rules`: allow/reject/ask by tool kind, title glob or path glob; the first
  matching rule wins, no match goes to ``default`` (itself fail-closed by default).
"""

from __future__ import annotations

import asyncio
import fnmatch
import inspect
import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from .. import schema as s
from ..sandbox import Concern
from .state import ToolCallView

__all__ = [
    "AllowAll",
    "AskUser",
    "PendingPermissions",
    "PermissionOutcome",
    "PermissionPolicy",
    "PermissionRequest",
    "RejectAll",
    "Rule",
    "Rules",
    "sensitive_write",
]

log = logging.getLogger("acpwire.client")

PermissionOutcome = s.SelectedPermissionOutcome | s.CancelledPermissionOutcome
"""What a policy answers: one of the offered options, or cancelled."""

_ALLOW = ("allow_once", "allow_always")
_REJECT = ("reject_once", "reject_always")


@dataclass(frozen=True)
class PermissionRequest:
    """One permission prompt, with the tool call merged with what the session already knew.

    ``tool_call`` carries the title, kind and paths from the earlier ``tool_call``
    update even when the request itself only repeats the id; ``params`` is the request
    exactly as it arrived. ``concern`` is ``None`` for the agent's own requests; the
    client sets it when it asks about a sensitive write itself (module docstring).
    """

    session_id: str
    tool_call: ToolCallView
    options: tuple[s.PermissionOption, ...]
    params: s.RequestPermissionRequest
    concern: Concern | None = None

    def option(self, *kinds: str) -> s.PermissionOption | None:
        """The first offered option whose kind is ``kinds[0]``, else ``kinds[1]``, ..."""
        for kind in kinds:
            for option in self.options:
                if option.kind == kind:
                    return option
        return None

    def select(self, option_id: str) -> PermissionOutcome:
        """Select an offered option by id; raises :class:`ValueError` for any other id."""
        if not any(o.option_id == option_id for o in self.options):
            raise ValueError(f"the agent offered no option {option_id!r}")
        return s.SelectedPermissionOutcome(option_id=option_id)

    def allow(self, *, always: bool = False) -> PermissionOutcome:
        """Select an allow option (``allow_always`` first when ``always``); rejects if none."""
        selected = self._first_of(_ALLOW, always)
        return self.reject() if selected is None else selected

    def reject(self, *, always: bool = False) -> PermissionOutcome:
        """Select a reject option (``reject_always`` first when ``always``); cancelled if none."""
        selected = self._first_of(_REJECT, always)
        return self.cancelled() if selected is None else selected

    def _first_of(self, kinds: tuple[str, str], always: bool) -> s.SelectedPermissionOutcome | None:
        """Select the offered option of ``kinds[0]``, else ``kinds[1]`` (the other way
        round when ``always``); None if neither is offered."""
        option = self.option(*(kinds[::-1] if always else kinds))
        return None if option is None else s.SelectedPermissionOutcome(option_id=option.option_id)

    def cancelled(self) -> PermissionOutcome:
        return s.CancelledPermissionOutcome()


class PermissionPolicy(Protocol):
    """Decides one permission request."""

    async def __call__(self, request: PermissionRequest) -> PermissionOutcome: ...


class RejectAll:
    """Answer every request with a reject option (cancelled when none is offered)."""

    def __init__(self, *, always: bool = False) -> None:
        self.always = always

    async def __call__(self, request: PermissionRequest) -> PermissionOutcome:
        return request.reject(always=self.always)


class AllowAll:
    """Answer every request with an allow option (``allow_always`` first when ``always``).

    The client's own questions about sensitive writes (``request.concern``) are rejected
    unless ``sensitive_writes`` is true.
    """

    def __init__(self, *, always: bool = False, sensitive_writes: bool = False) -> None:
        self.always = always
        self.sensitive_writes = sensitive_writes

    async def __call__(self, request: PermissionRequest) -> PermissionOutcome:
        if request.concern is not None and not self.sensitive_writes:
            return request.reject()
        return request.allow(always=self.always)


AskCallback = Callable[
    [PermissionRequest],
    "PermissionOutcome | str | Awaitable[PermissionOutcome | str | None] | None",
]


class AskUser:
    """Interactive: ``callback`` shows the request and returns the user's choice.

    It may be a plain or an async function and returns an option id, an outcome, or
    ``None`` when the prompt was dismissed (answered ``cancelled``). When the turn is
    cancelled meanwhile, the toolkit cancels the awaiting task, so a UI sees
    :class:`asyncio.CancelledError` and can close the prompt.
    """

    def __init__(self, callback: AskCallback) -> None:
        self.callback = callback

    async def __call__(self, request: PermissionRequest) -> PermissionOutcome:
        answer = self.callback(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer is None:
            return request.cancelled()
        if isinstance(answer, str):
            return request.select(answer)
        return answer


RuleAction = Literal["allow", "reject", "ask"]


@dataclass(frozen=True)
class Rule:
    """Matches a request when every criterion given matches; ``None`` means "any".

    ``kind``: one tool kind or several. ``title``: a glob (``fnmatch``, case-sensitive)
    on the tool call's title. ``path``: a glob matched against every path the tool call
    names (its locations and diffs); ``*`` also crosses ``/``, so ``"/repo/*"`` covers the
    whole tree. A rule with ``path`` never matches a call that names no path.
    ``always`` selects the ``*_always`` option when the agent offers one.
    """

    action: RuleAction
    kind: str | Collection[str] | None = None
    title: str | None = None
    path: str | None = None
    always: bool = False

    def matches(self, tool_call: ToolCallView) -> bool:
        if self.kind is not None:
            kinds = (self.kind,) if isinstance(self.kind, str) else self.kind
            if (tool_call.kind or "other") not in kinds:
                return False
        if self.title is not None and not fnmatch.fnmatchcase(tool_call.title or "", self.title):
            return False
        if self.path is not None:
            pattern = self.path
            if not any(fnmatch.fnmatchcase(p, pattern) for p in tool_call.paths):
                return False
        return True


class Rules:
    """Rule-based, first match wins; ``default`` decides when no rule matches.

    ``ask`` is the policy for rules whose action is ``"ask"`` (typically an
    :class:`AskUser`); it is required when such a rule exists.
    """

    def __init__(
        self,
        rules: Sequence[Rule],
        *,
        default: PermissionPolicy | None = None,
        ask: PermissionPolicy | None = None,
    ) -> None:
        if ask is None and any(rule.action == "ask" for rule in rules):
            raise ValueError("a rule says 'ask' but no ask policy was given")
        for rule in rules:
            if rule.action not in ("allow", "reject", "ask"):
                raise ValueError(f"unknown rule action {rule.action!r}")
        self.rules = tuple(rules)
        self.default: PermissionPolicy = default if default is not None else RejectAll()
        self.ask = ask

    def match(self, request: PermissionRequest) -> Rule | None:
        """The first rule matching ``request``, if any."""
        return next((rule for rule in self.rules if rule.matches(request.tool_call)), None)

    async def __call__(self, request: PermissionRequest) -> PermissionOutcome:
        rule = self.match(request)
        if rule is None:
            return await self.default(request)
        if rule.action == "allow":
            return request.allow(always=rule.always)
        if rule.action == "reject":
            return request.reject(always=rule.always)
        assert self.ask is not None
        return await self.ask(request)


_WRITE_OPTIONS = (
    s.PermissionOption(option_id="allow", name="Allow this write", kind="allow_once"),
    s.PermissionOption(option_id="refuse", name="Refuse", kind="reject_once"),
)
"""The options of the client's own request before a sensitive write: ``allow`` writes."""


def sensitive_write(
    session_id: str, path: str, content: str, concern: Concern, tool_call_id: str
) -> PermissionRequest:
    """The request the client puts to its policy before writing ``content`` to ``path``
    (resolved), which the sandbox writes only with permission (see the module text)."""
    title = (
        f"Overwrite the executable file {path}"
        if concern == "executable"
        else f"Write {path} (tools may load or run it on their own)"
    )
    locations = [s.ToolCallLocation(path=path)]
    diff: list[s.ToolCallContent] = [s.Diff(path=path, new_text=content)]
    tool_call = s.ToolCallUpdate(
        tool_call_id=tool_call_id, title=title, kind="edit", locations=locations, content=diff
    )
    view = ToolCallView(
        tool_call_id, title=title, kind="edit", content=[*diff], locations=[*locations]
    )
    params = s.RequestPermissionRequest(
        session_id=session_id, tool_call=tool_call, options=list(_WRITE_OPTIONS)
    )
    return PermissionRequest(session_id, view, _WRITE_OPTIONS, params, concern=concern)


class PendingPermissions:
    """The permission requests a client has put to its policy and not yet answered, by
    session: a ``session/cancel`` (or the client closing) answers them ``cancelled`` at
    once (CANCEL-002, TOOL-003) while the policy, a person perhaps, is still deciding.

    The policy is checked here too (see the module text): one that raises, picks an
    option the agent did not offer or returns anything but an outcome is answered with
    a reject option.
    """

    def __init__(self) -> None:
        self._waiting: dict[str, set[asyncio.Future[PermissionOutcome]]] = {}

    async def ask(self, policy: PermissionPolicy, request: PermissionRequest) -> PermissionOutcome:
        """``policy``'s answer to ``request``, or ``cancelled`` if its session is cancelled first."""
        answer: asyncio.Future[PermissionOutcome] = asyncio.get_running_loop().create_future()
        waiting = self._waiting.setdefault(request.session_id, set())
        waiting.add(answer)
        task = asyncio.ensure_future(_checked(policy, request))

        def deliver(done: asyncio.Task[PermissionOutcome]) -> None:
            if not answer.done() and not done.cancelled():
                answer.set_result(done.result())

        task.add_done_callback(deliver)
        try:
            return await answer
        finally:
            waiting.discard(answer)
            if not waiting:
                self._waiting.pop(request.session_id, None)
            if not task.done():
                task.cancel()

    def cancel(self, session_id: str) -> None:
        """Answer every waiting request of ``session_id`` ``cancelled``."""
        for answer in list(self._waiting.get(session_id, ())):
            if not answer.done():
                answer.set_result(s.CancelledPermissionOutcome())

    def cancel_all(self) -> None:
        """Answer every waiting request ``cancelled`` (the client is closing)."""
        for session_id in list(self._waiting):
            self.cancel(session_id)

    def count(self, session_id: str) -> int:
        """How many requests of ``session_id`` await an answer."""
        return len(self._waiting.get(session_id, ()))


async def _checked(policy: PermissionPolicy, request: PermissionRequest) -> PermissionOutcome:
    """``policy``'s answer, failing closed (see :class:`PendingPermissions`)."""
    try:
        outcome = await policy(request)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("permission policy failed; rejecting")
        return request.reject()
    if isinstance(outcome, s.SelectedPermissionOutcome) and not any(
        o.option_id == outcome.option_id for o in request.options
    ):
        log.warning(
            "permission policy chose %r, which was not offered; rejecting", outcome.option_id
        )
        return request.reject()
    # A policy is user code: its answer's type is checked at run time.
    if not isinstance(outcome, (s.SelectedPermissionOutcome, s.CancelledPermissionOutcome)):
        log.warning("permission policy returned %r; rejecting", outcome)
        return request.reject()
    return outcome
