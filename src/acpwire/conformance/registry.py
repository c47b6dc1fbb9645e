"""What a check is: its key, the requirement ids it proves, its target, stage and needs.

Checks are declared where they are judged. Each module of checks opens with a
:class:`Group` and declares its checks on it, beside the code that gives their verdicts::

    GROUP = Group("agent", stage="main")
    UNKNOWN_METHOD = GROUP.check(
        "unknown-method", "an unknown method is answered -32601", proves=("RPC-006",)
    )
    ...
    live.record(UNKNOWN_METHOD, "pass")

The code refers to the :class:`Check` object, never to its key as a string, so a verdict
cannot name a check that does not exist, and a declaration names its requirement ids
once, where the rule is tested. :mod:`.catalogue` gathers the groups into the one list
``acp check`` reports in.

A check belongs to a *target kind*: ``agent`` (a program that speaks ACP, on stdio or
behind an endpoint), ``client`` (a command that starts an agent, played by the checker's
scripted agent) or ``endpoint`` (a remote ``/acp`` endpoint after the Streamable HTTP and
WebSocket RFD, and the security rules of docs/security.md); ``agent-v2`` are the v2
draft's. It also belongs to a *stage*, the part of a run that gives its verdict. For
agents and clients:

``probe``     own short-lived agent processes (version negotiation, exit on end of input);
``main``      the main conversation, with a client that advertises no optional capability
              and rejects every permission request;
``full``      a second conversation with every client capability, permissions granted;
``scenario``  (clients) one run of the client against one script of the scripted agent;
``wire``      the recording of all of them, read afterwards.

For endpoints: ``http`` (the Streamable HTTP profile), ``websocket`` (the WebSocket
profile) and ``security`` (who may reach the agent, and who may see what).

A check's level is the strongest level among its requirements, but a failure states
which of them it broke, and the failure's level follows those (a check citing a MUST
and a SHOULD rule fails at SHOULD level when only the SHOULD rule was broken).
``needs`` names what the check needs from the target or the command line; without it
the check is ``n/a`` (a feature the agent does not offer) or ``skip`` (an option not given).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from .requirements import BY_ID, Level

__all__ = [
    "NEEDS",
    "TARGETS",
    "Check",
    "Group",
    "Stage",
    "Status",
    "Target",
    "strongest",
]

Status = Literal["pass", "fail", "skip", "n/a"]
Target = Literal["agent", "client", "endpoint", "agent-v2"]
"""What a check is run against (``agent-v2``: an agent over the v2 draft, ``--protocol 2``)."""
TARGETS: tuple[Target, ...] = ("agent", "client", "endpoint", "agent-v2")
Stage = Literal["probe", "main", "full", "wire", "scenario", "http", "websocket", "security", "v2"]

NEEDS: Mapping[str, str] = {
    "session": "session/new succeeds (after --auth-method if the agent needs authentication)",
    "turn": "a prompt (--prompt) that ends normally",
    "slow-prompt": "--slow-prompt: a prompt that keeps the agent busy until cancelled",
    "tool-prompt": "--tool-prompt: a prompt that makes the agent use tools",
    "loadSession": "the agent advertises loadSession",
    "list": "the agent advertises sessionCapabilities.list",
    "modes": "session/new offers modes",
    "config": "session/new offers config options",
    "promptCapabilities": "the agent advertises at least one prompt capability",
    "client-prompt": "the client sends a prompt by itself ({prompt}, --client-prompt)",
    "client-workspace": "the session's cwd is the checker's folder (the client's working "
    "directory, or {cwd})",
    "client-fs-read": "the client advertises fs.readTextFile",
    "client-fs-write": "the client advertises fs.writeTextFile",
    "client-terminal": "the client advertises terminal",
    "client-cancel": "the client sends session/cancel when interrupted (SIGINT during a turn)",
    "attach": "the agent advertises loadSession or sessionCapabilities.resume",
    "token": "a bearer token (--token, ACP_TOKEN or an Authorization: Bearer --header)",
    "token2": "--token2: the token of a second principal",
    "loopback": "the URL names a loopback address (127.0.0.1, ::1, localhost)",
    "cookies": "the endpoint sets cookies",
    "event-ids": "the endpoint's SSE events carry ids",
    "resumable": "the endpoint advertises transport.resumable (the durable transport draft)",
}
"""What a check may need, by the short name used in :attr:`Check.needs` and the docs."""


def strongest(ids: Sequence[str]) -> Level:
    """MUST if any of the requirements ``ids`` is a MUST, else SHOULD."""
    return "MUST" if any(BY_ID[i].level == "MUST" for i in ids) else "SHOULD"


@dataclass(frozen=True, slots=True)
class Check:
    """One check: a stable ``key`` (usable with ``--only``), a title and the rules it tests
    (``ids``, the requirement ids it proves)."""

    key: str
    title: str
    ids: tuple[str, ...]
    stage: Stage
    needs: tuple[str, ...] = ()
    target: Target = "agent"

    @property
    def level(self) -> Level:
        return strongest(self.ids)


class Group:
    """The checks one module declares, in the order it declares them (the report's order
    within the group)."""

    def __init__(self, target: Target, stage: Stage) -> None:
        self.target: Target = target
        self.stage: Stage = stage
        """The stage of a check declared without one."""
        self.checks: list[Check] = []

    def check(
        self,
        key: str,
        title: str,
        *,
        proves: Iterable[str],
        stage: Stage | None = None,
        needs: Iterable[str] = (),
    ) -> Check:
        """Declare a check that proves the requirements ``proves``; raises ``ValueError``
        for an id :mod:`.requirements` does not list or a need :data:`NEEDS` does not."""
        ids, wants = tuple(proves), tuple(needs)
        if not ids:
            raise ValueError(f"check {key} proves no requirement")
        unknown = [i for i in ids if i not in BY_ID] + [n for n in wants if n not in NEEDS]
        if unknown:
            raise ValueError(f"check {key} names unknown ids or needs: {', '.join(unknown)}")
        declared = Check(key, title, ids, stage or self.stage, wants, self.target)
        self.checks.append(declared)
        return declared
