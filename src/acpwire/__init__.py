"""acpwire: the Python toolkit for the Agent Client Protocol (ACP).

* :mod:`acpwire.schema` — typed models of every ACP v1 type, generated from the official schema.
* :mod:`acpwire.agent` — write agents (:class:`~acpwire.agent.AgentApp`, or the low-tier :class:`~acpwire.agent.Agent`).
* :mod:`acpwire.client` — drive agents (:class:`~acpwire.client.ToolkitClient`, :func:`~acpwire.client.open_agent`).
* :mod:`acpwire.transports` — stdio, subprocess and in-memory transports.
"""

from .protocol.errors import (
    AcpError,
    AuthRequired,
    CapabilityError,
    ConnectionClosedError,
    ConnectionLost,
    ErrorCode,
    InternalError,
    InvalidParams,
    InvalidRequest,
    LocalProtocolError,
    MethodNotFound,
    ParseError,
    RequestCancelled,
    RequestError,
    ResourceNotFound,
    UnstableMethodError,
    VersionMismatchError,
)
from .protocol.version import PROTOCOL_VERSION

__version__ = "0.1.0"
"""The package version (kept equal to pyproject.toml's by a test; no importlib.metadata
at import time, which costs agents tens of milliseconds at every start)."""

__all__ = [
    "PROTOCOL_VERSION",
    "AcpError",
    "AuthRequired",
    "CapabilityError",
    "ConnectionClosedError",
    "ConnectionLost",
    "ErrorCode",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "LocalProtocolError",
    "MethodNotFound",
    "ParseError",
    "RequestCancelled",
    "RequestError",
    "ResourceNotFound",
    "UnstableMethodError",
    "VersionMismatchError",
    "__version__",
]
