"""An agent's authentication methods, read as what a person has to do.

The ``initialize`` answer lists ``authMethods`` (initialization.mdx, "Authentication"):

* **agent** (no ``type``): the client calls ``authenticate`` with the method id and the
  agent does the rest (it may print a login URL or open a browser);
* **terminal** (``type: "terminal"``, offered only to clients that advertise
  ``auth.terminal``): the client runs the agent's own command with ``args`` appended and
  ``env`` set, in a terminal the user can type into; exit status 0 means success, and
  the method is never passed to ``authenticate``;
* **env_var** (``type: "env_var"``, unstable, sent by codex-acp): the user supplies the
  listed ``vars`` and the client starts the agent again with them set; ``link`` says
  where to get the credentials. The v1 models do not know this member, so it arrives as
  :class:`~acpwire.schema.UnknownAuthMethod` and is read from its raw JSON here;
* anything else is kept with its ``type`` so a client can still name it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from .. import schema as s
from ..schema import UnsetType, unset_to_none

__all__ = ["AuthOption", "EnvVarSpec", "auth_options"]

AuthKind = Literal["agent", "terminal", "env_var", "other"]


@dataclass(frozen=True)
class EnvVarSpec:
    """One variable an ``env_var`` method needs; ``secret`` values are not echoed."""

    name: str
    label: str | None = None
    secret: bool = True
    optional: bool = False


@dataclass(frozen=True)
class AuthOption:
    """One advertised method and what using it takes.

    ``argv`` and ``env`` are set for terminal methods (the agent command relaunched with
    the method's arguments), ``vars`` and ``link`` for env_var methods, ``type`` for
    methods of a kind this library does not know.
    """

    id: str
    name: str
    kind: AuthKind
    description: str | None = None
    argv: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict[str, str])
    vars: list[EnvVarSpec] = field(default_factory=list[EnvVarSpec])
    link: str | None = None
    type: str | None = None

    @property
    def usable(self) -> bool:
        """Whether a client can act on it (``other`` methods can only be shown)."""
        return self.kind != "other"


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _env_vars(raw: Mapping[str, Any]) -> list[EnvVarSpec]:
    out: list[EnvVarSpec] = []
    items: object = raw.get("vars")
    for item in cast("list[object]", items) if isinstance(items, list) else []:
        if isinstance(item, str):
            out.append(EnvVarSpec(item))
        elif isinstance(item, dict):
            spec = cast("dict[str, Any]", item)
            name = _text(spec.get("name"))
            if name is not None:
                out.append(
                    EnvVarSpec(
                        name,
                        _text(spec.get("label")),
                        spec.get("secret") is not False,
                        spec.get("optional") is True,
                    )
                )
    return out


def _from_raw(raw: Mapping[str, Any]) -> AuthOption | None:
    method_id = _text(raw.get("id")) or _text(raw.get("methodId"))
    if method_id is None:
        return None
    name = _text(raw.get("name")) or method_id
    description = _text(raw.get("description"))
    kind = _text(raw.get("type"))
    if kind == "env_var":
        return AuthOption(
            method_id,
            name,
            "env_var",
            description,
            vars=_env_vars(raw),
            link=_text(raw.get("link")),
        )
    return AuthOption(method_id, name, "other", description, type=kind)


def auth_options(
    response: s.InitializeResponse | None, agent_argv: Sequence[str]
) -> list[AuthOption]:
    """The methods of an ``initialize`` answer, in the agent's order.

    ``agent_argv`` is the command the agent was started with; terminal methods append
    their ``args`` to it.
    """
    if response is None or isinstance(response.auth_methods, UnsetType):
        return []
    out: list[AuthOption] = []
    for method in response.auth_methods:
        if isinstance(method, s.AuthMethodTerminal):
            args = [] if isinstance(method.args, UnsetType) else list(method.args)
            env = {} if isinstance(method.env, UnsetType) else dict(method.env)
            description = unset_to_none(method.description)
            out.append(
                AuthOption(
                    method.id,
                    method.name,
                    "terminal",
                    description,
                    argv=[*agent_argv, *args],
                    env=env,
                )
            )
        elif isinstance(method, s.AuthMethodAgent):
            description = unset_to_none(method.description)
            out.append(AuthOption(method.id, method.name, "agent", description))
        else:
            option = _from_raw(method.raw)
            if option is not None:
                out.append(option)
    return out
