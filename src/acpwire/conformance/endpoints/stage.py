"""What the endpoint checks share: the target and options, where verdicts go, and what
the transport checks learn about getting in (:class:`Reach`), which the security checks
wait for before they judge anything that needs the checker's own access."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ..options import CheckOptions
from ..report import Report, Verdicts
from .target import EndpointTarget

__all__ = ["REFUSED_CREDENTIALS", "EndpointStage", "Reach"]

REFUSED_CREDENTIALS = frozenset({401, 403})


@dataclass
class Reach:
    """What the first POST ``initialize`` and the first WebSocket upgrade taught."""

    connection_ids: list[str] = field(default_factory=list[str])
    """Every connection id the endpoint issued to the transport checks."""
    unknown_status: int = 404
    """What the endpoint answers a POST naming a made-up connection id."""
    http_offered: bool | None = None
    """Whether POST initialize opened a connection (None: not known yet)."""
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once both profiles were tried, so :attr:`http_offered` and ``report.blocked``
    say whether the checker gets in."""
    pending: set[str] = field(default_factory=lambda: {"http", "websocket"})

    def tried(self, profile: str) -> None:
        """``profile`` (``http`` or ``websocket``) was tried once."""
        self.pending.discard(profile)
        if not self.pending:
            self.reached.set()


@dataclass
class EndpointStage:
    """One part of an endpoint check: the target, the options, where verdicts go."""

    options: CheckOptions
    v: Verdicts
    report: Report
    reach: Reach
    cwd: str
    """The folder sessions are opened in."""

    @property
    def target(self) -> EndpointTarget:
        assert self.options.endpoint is not None
        return self.options.endpoint

    def refused_credentials(self, where: str, status: int) -> str:
        reason = (
            f"blocked by authentication: {where} answered HTTP {status} to the checker's "
            "credentials; pass --token (or ACP_TOKEN) or --header"
        )
        self.report.blocked = self.report.blocked or reason
        return reason
