"""What an :class:`~acpwire.agent.app.AgentApp` declares, as the runtime of each of its
connections (:mod:`acpwire.agent.runtime`) reads it.

The app is declarations; the runtime serves them. The runtime reads the app through
:class:`AppDeclarations` and never imports the app module, so the app can import the
runtime (and the layers that serve it in another protocol version) without a circle.
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .. import schema as s
    from ..store import SessionStore
    from .auth import AuthMethod
    from .commands import Command
    from .history import HistoryWriter
    from .options import ConfigSpec
    from .providers import Providers
    from .sessions import McpSupport
    from .turn import PromptHandler

__all__ = ["AppDeclarations", "AppHooks", "AuthHook", "CheckHook", "LoginHook", "LogoutHook"]

AuthHook = Callable[[str], Awaitable[bool | None]]
CheckHook = Callable[[], Awaitable[bool]]
LogoutHook = Callable[[], Awaitable[None]]
LoginHook = Callable[[str], int | None]


@dataclass
class AppHooks:
    """What an :class:`AgentApp`'s decorators registered; each connection's runtime reads it."""

    prompt: PromptHandler | None = None
    commands: dict[str, PromptHandler] = field(default_factory=dict[str, "PromptHandler"])
    """Slash command name to its handler."""
    authenticate: AuthHook | None = None
    is_authenticated: CheckHook | None = None
    logout: LogoutHook | None = None
    terminal_login: LoginHook | None = None


class AppDeclarations(Protocol):
    """The app as its runtime sees it (:class:`~acpwire.agent.app.AgentApp` is one; the
    meaning of each member is documented there)."""

    name: str
    version: str
    title: str | None
    store: SessionStore
    durable: bool
    config: ConfigSpec
    commands: dict[str, Command]
    auth_methods: list[AuthMethod]
    auth_required: bool
    auto_title: bool
    page_size: int
    chunk_interval: float | None
    unstable: bool
    providers: Providers
    mcp_support: McpSupport
    hooks: AppHooks
    connections: weakref.WeakSet[Any]
    """The runtime of every connection the app serves (session/status asks them all)."""

    @property
    def history(self) -> HistoryWriter: ...

    def prompt_capabilities(self) -> s.PromptCapabilities: ...

    def agent_capabilities(self, *, unstable_peer: bool = True) -> s.AgentCapabilities: ...
