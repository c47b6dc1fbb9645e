"""The agent role.

Two tiers on one engine: :class:`AgentApp` (a real agent in a few lines, see
docs/agents.md) and the low tier :class:`Agent` (one method per client->agent
method) with :class:`ClientPeer` for calling the client.
"""

from .app import (
    AgentApp,
    AgentAuth,
    Answer,
    Choice,
    ChoiceGroup,
    Command,
    Mode,
    Permission,
    PermissionDenied,
    Plan,
    Select,
    Session,
    StopReason,
    TerminalAuth,
    Toggle,
    ToolCall,
    ToolError,
    Turn,
    TurnInProgress,
    location,
    permission_option,
)
from .connection import Agent, AgentSideConnection, ClientPeer, run_agent, serve_stdio
from .store import MemorySessionStore, SessionRecord, SessionStore, SqliteSessionStore

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
    "location",
    "permission_option",
    "run_agent",
    "serve_stdio",
]
