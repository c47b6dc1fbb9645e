"""What one ``acp check`` run of an agent or an endpoint is told (:class:`CheckOptions`).

Its own module so that the runner and the checks it runs all read it without importing
each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .endpoints.target import EndpointTarget

__all__ = ["CheckOptions"]


@dataclass
class CheckOptions:
    """What to check and how: the agent's argv and the knobs of ``acp check``."""

    command: Sequence[str] = ()
    """The agent's command (empty when checking an endpoint)."""
    endpoint: EndpointTarget | None = None
    """A remote endpoint to check instead of a command (``acp check --url``)."""
    prompt: str = "Hello"
    """A prompt the agent answers quickly."""
    slow_prompt: str | None = None
    """A prompt that keeps the agent busy until cancelled (cancel checks skip without it)."""
    tool_prompts: Sequence[str] = field(default_factory=tuple[str, ...])
    """Prompts that make the agent use tools, run with every capability and permissions granted."""
    only: frozenset[str] | None = None
    """Check keys to run and report (see :func:`~.catalogue.select_checks`); None means all."""
    timeout: float = 30.0
    """Seconds to wait for an answer that may take work (initialize, session/new, a turn)."""
    quick_timeout: float = 5.0
    """Seconds to wait for an answer that needs no work (an unknown method, bad params)."""
    grace: float = 5.0
    """Seconds allowed to end a cancelled turn, to exit after stdin closes, to connect to MCP."""
    cwd: str | None = None
    """The sessions' folder (absolute); a fresh temporary folder when None."""
    auth_method: str | None = None
    """``authenticate`` with this method id when the agent says authentication is required."""
    env: Mapping[str, str] | None = None

    @property
    def quick(self) -> float:
        """The wait for an answer that needs no work: ``quick_timeout``, never longer than
        ``timeout``."""
        return min(self.quick_timeout, self.timeout)
