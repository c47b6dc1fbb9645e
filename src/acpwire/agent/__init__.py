"""The agent role.

Two tiers on one engine: :class:`AgentApp` (a real agent in a few lines, see
docs/agents.md) and the low tier :class:`Agent` (one method per client->agent
method) with :class:`ClientPeer` for calling the client.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
from .connection import Agent, AgentSideConnection, ClientPeer, run_agent, serve_stdio

if TYPE_CHECKING:
    from ..store import MemorySessionStore, SessionRecord, SessionStore, SqliteSessionStore
    from .app import (
        AgentApp,
        AgentAuth,
        Answer,
        Choice,
        ChoiceGroup,
        Command,
        Mode,
        Plan,
        Provider,
        ProviderConfig,
        Select,
        Session,
        StopReason,
        TerminalAuth,
        Toggle,
        Turn,
        TurnInProgress,
    )
    from .tools import (
        Permission,
        PermissionDenied,
        ToolCall,
        ToolError,
        error_text,
        location,
        permission_option,
    )

# The high tier (and acpwire.store) load on first use, so a low-tier agent starts
# without importing them.
_LAZY = {
    **dict.fromkeys(
        [
            "AgentApp",
            "AgentAuth",
            "Answer",
            "Choice",
            "ChoiceGroup",
            "Command",
            "Mode",
            "Plan",
            "Provider",
            "ProviderConfig",
            "Select",
            "Session",
            "StopReason",
            "TerminalAuth",
            "Toggle",
            "Turn",
            "TurnInProgress",
        ],
        "app",
    ),
    **dict.fromkeys(
        [
            "Permission",
            "PermissionDenied",
            "ToolCall",
            "ToolError",
            "error_text",
            "location",
            "permission_option",
        ],
        "tools",
    ),
    **dict.fromkeys(
        ["MemorySessionStore", "SessionRecord", "SessionStore", "SqliteSessionStore"], ".store"
    ),
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "Agent",
    "AgentApp",
    "AgentAuth",
    "AgentSideConnection",
    "Answer",
    "Choice",
    "ChoiceGroup",
    "ClientPeer",
    "Command",
    "MemorySessionStore",
    "Mode",
    "Permission",
    "PermissionDenied",
    "Plan",
    "Provider",
    "ProviderConfig",
    "Select",
    "Session",
    "SessionRecord",
    "SessionStore",
    "SqliteSessionStore",
    "StopReason",
    "TerminalAuth",
    "Toggle",
    "ToolCall",
    "ToolError",
    "Turn",
    "TurnInProgress",
    "error_text",
    "location",
    "permission_option",
    "run_agent",
    "serve_stdio",
]
