"""Authentication methods an app declares (authentication.mdx).

Two kinds exist. An :class:`AgentAuth` method is completed by the client
calling ``authenticate`` with its id; the app's ``authenticate`` hook decides.
A :class:`TerminalAuth` method is completed out of band: the client relaunches
the agent with ``args``/``env`` in a terminal, the agent runs its interactive
login and exits. Terminal methods are only listed to clients that advertised
``auth.terminal`` (AUTH-002) and are never accepted by ``authenticate``
(AUTH-003).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .. import schema as s
from ..schema import none_to_unset

__all__ = ["AgentAuth", "AuthMethod", "TerminalAuth", "advertised_methods"]


@dataclass(frozen=True)
class AgentAuth:
    """A method the client completes by calling ``authenticate`` with ``id``."""

    id: str
    name: str
    description: str | None = None


@dataclass(frozen=True)
class TerminalAuth:
    """A login the client runs by relaunching the agent with ``args`` and ``env``."""

    id: str
    name: str
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    description: str | None = None


AuthMethod = AgentAuth | TerminalAuth


def advertised_methods(methods: Sequence[AuthMethod], *, terminal: bool) -> list[s.AuthMethod]:
    """The ``authMethods`` of the initialize result for a client (``terminal``: it sent ``auth.terminal``)."""
    out: list[s.AuthMethod] = []
    for m in methods:
        description = none_to_unset(m.description)
        if isinstance(m, TerminalAuth):
            if terminal:
                out.append(
                    s.AuthMethodTerminal(
                        id=m.id,
                        name=m.name,
                        description=description,
                        args=list(m.args),
                        env=dict(m.env),
                    )
                )
        else:
            out.append(s.AuthMethodAgent(id=m.id, name=m.name, description=description))
    return out
