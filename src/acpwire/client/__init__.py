"""The client role.

:class:`ToolkitClient` and :func:`open_agent` are the batteries (sandboxed
files, real terminals, permission and access policies, session state;
docs/clients.md, docs/security.md);
:class:`Client`, :class:`AgentPeer` and :func:`connect` are the low tier;
:func:`auth_options` reads an agent's authentication methods as what a person must do.
"""

from .access import (
    AccessPolicy,
    AccessRequest,
    ReadRequest,
    TerminalRequest,
    WriteRequest,
    read_only,
)
from .auth import AuthOption, EnvVarSpec, auth_options
from .connection import AgentPeer, Client, ClientSideConnection, connect
from .elicitation import ElicitationHandler, FormRequest, UrlRequest
from .fs import WorkspaceFiles
from .permissions import (
    AllowAll,
    AskUser,
    PermissionPolicy,
    PermissionRequest,
    RejectAll,
    Rule,
    Rules,
)
from .state import MessageView, SessionState, ToolCallView
from .terminals import TerminalManager
from .toolkit import (
    AgentExitedError,
    AgentNotFoundError,
    AgentStartError,
    ToolkitClient,
    open_agent,
)

__all__ = [
    "AccessPolicy",
    "AccessRequest",
    "AgentExitedError",
    "AgentNotFoundError",
    "AgentPeer",
    "AgentStartError",
    "AllowAll",
    "AskUser",
    "AuthOption",
    "Client",
    "ClientSideConnection",
    "ElicitationHandler",
    "EnvVarSpec",
    "FormRequest",
    "MessageView",
    "PermissionPolicy",
    "PermissionRequest",
    "ReadRequest",
    "RejectAll",
    "Rule",
    "Rules",
    "SessionState",
    "TerminalManager",
    "TerminalRequest",
    "ToolCallView",
    "ToolkitClient",
    "UrlRequest",
    "WorkspaceFiles",
    "WriteRequest",
    "auth_options",
    "connect",
    "open_agent",
    "read_only",
]
