"""Permission policies decide hand-made requests; everything fails closed."""

from __future__ import annotations

import pytest

from acpwire import schema as s
from acpwire.client.permissions import (
    AllowAll,
    AskUser,
    PermissionRequest,
    RejectAll,
    Rule,
    Rules,
)
from acpwire.client.state import ToolCallView

ALL_OPTIONS = (
    s.PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
    s.PermissionOption(option_id="always", name="Always", kind="allow_always"),
    s.PermissionOption(option_id="no", name="Reject", kind="reject_once"),
    s.PermissionOption(option_id="never", name="Never", kind="reject_always"),
)


def request(
    *,
    kind: str | None = "edit",
    title: str = "Write /repo/src/a.py",
    paths: tuple[str, ...] = ("/repo/src/a.py",),
    options: tuple[s.PermissionOption, ...] = ALL_OPTIONS,
) -> PermissionRequest:
    view = ToolCallView(
        tool_call_id="c",
        title=title,
        kind=kind,
        locations=[s.ToolCallLocation(path=p) for p in paths],
    )
    params = s.RequestPermissionRequest(
        session_id="s", tool_call=s.ToolCallUpdate(tool_call_id="c"), options=list(options)
    )
    return PermissionRequest("s", view, options, params)


def chosen(outcome: s.SelectedPermissionOutcome | s.CancelledPermissionOutcome) -> str:
    return outcome.option_id if isinstance(outcome, s.SelectedPermissionOutcome) else "cancelled"


async def test_default_policy_selects_a_reject_option() -> None:
    assert chosen(await RejectAll()(request())) == "no"
    assert chosen(await RejectAll(always=True)(request())) == "never"


async def test_default_policy_answers_cancelled_when_no_reject_option_is_offered() -> None:
    allow_only = (ALL_OPTIONS[0],)
    assert chosen(await RejectAll()(request(options=allow_only))) == "cancelled"


async def test_allow_all_prefers_once_unless_told_always_and_fails_closed_without_allow() -> None:
    assert chosen(await AllowAll()(request())) == "yes"
    assert chosen(await AllowAll(always=True)(request())) == "always"
    reject_only = (ALL_OPTIONS[2],)
    assert chosen(await AllowAll()(request(options=reject_only))) == "no"


async def test_rules_first_match_wins() -> None:
    policy = Rules(
        [
            Rule("reject", path="/repo/secrets/*"),
            Rule("allow", kind=("read", "search")),
            Rule("allow", path="/repo/*", kind="edit", always=True),
        ]
    )
    assert chosen(await policy(request(kind="read", paths=("/repo/secrets/key",)))) == "no"
    assert chosen(await policy(request(kind="read", paths=()))) == "yes"
    assert chosen(await policy(request(kind="edit"))) == "always"
    # No rule matches: the default rejects.
    assert chosen(await policy(request(kind="execute", paths=()))) == "no"


async def test_rules_match_titles_by_glob_and_treat_a_missing_kind_as_other() -> None:
    policy = Rules([Rule("allow", title="Run: git *"), Rule("allow", kind="other")])
    assert chosen(await policy(request(kind="execute", title="Run: git status", paths=()))) == "yes"
    assert chosen(await policy(request(kind=None, title="?", paths=()))) == "yes"


async def test_a_path_rule_never_matches_a_call_without_paths() -> None:
    policy = Rules([Rule("allow", path="*")])
    assert chosen(await policy(request(paths=()))) == "no"


async def test_ask_rules_go_to_the_interactive_policy() -> None:
    asked: list[str] = []

    async def ask(req: PermissionRequest) -> str:
        asked.append(req.tool_call.title or "")
        return "always"

    policy = Rules([Rule("ask", kind="execute")], ask=AskUser(ask), default=AllowAll())
    assert chosen(await policy(request(kind="execute", title="Run: rm", paths=()))) == "always"
    assert chosen(await policy(request(kind="read"))) == "yes"
    assert asked == ["Run: rm"]


def test_an_ask_rule_without_an_ask_policy_is_refused_up_front() -> None:
    with pytest.raises(ValueError, match="ask"):
        Rules([Rule("ask")])


async def test_interactive_callback_may_dismiss_the_prompt() -> None:
    assert chosen(await AskUser(lambda req: None)(request())) == "cancelled"


async def test_selecting_an_option_that_was_not_offered_is_an_error() -> None:
    with pytest.raises(ValueError, match="no option"):
        request().select("maybe")
