"""What a store shared by several workers keeps of the remote endpoint's streams.

``acp serve --resumable`` on a store every worker shares (PostgreSQL: the
``--demo --store postgresql://...`` workers behind HAProxy of docs/scale-out.md)
writes each stream's messages to the store before it writes them to the client,
so that when a worker dies, a client that resumes through another worker still
gets what it missed (docs/remote.md, "Resume by cursor"). A store that
implements :class:`StreamLog` offers it; the endpoint's side is
:mod:`acpwire.server.retention`.

* **Stream keys.** A stream is named by its connection id and ``""`` (the
  connection stream, or a WebSocket's) or a session id (an SSE session stream).
* **Retention.** Each stream keeps its last ``keep`` messages (older ones are
  deleted as new ones come); rows of a connection go when it ends, and any not
  written for a long time (a dead worker's, whose client never came back) when
  a worker sweeps (:meth:`StreamLog.sweep_streams`).
* **Workers.** A worker says it is alive by holding a lock for as long as its
  process lives (:meth:`StreamLog.worker_started`); a worker that died, SIGKILL
  included, holds nothing. Only a dead worker's streams are served by another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class StoredStream:
    """What a store knows of one stream."""

    principal: str
    worker: str
    mode: str
    """``http`` or ``websocket``."""
    high: int
    """Cursor of the last message kept (0: none)."""
    low: int
    """Cursor of the oldest message still kept (0: none)."""
    turns: str
    """The turn state of each session the stream carries, as JSON (a v1 ``acp/turnState``
    by session id), as of its last message."""


@runtime_checkable
class StreamLog(Protocol):
    """A store that keeps the endpoint's streams for the workers sharing it."""

    async def worker_started(self, worker: str) -> None:
        """Hold ``worker``'s liveness lock until this process ends (or the store closes)."""
        ...

    async def worker_alive(self, worker: str) -> bool:
        """Whether the process that started ``worker`` still holds its lock."""
        ...

    async def keep_stream(
        self,
        connection_id: str,
        stream: str,
        *,
        principal: str,
        worker: str,
        mode: str,
        entries: Sequence[tuple[int, bytes]],
        turns: str,
        keep: int,
    ) -> None:
        """Add ``entries`` (cursor, message), newest last, to the stream; keep its last
        ``keep``; record its owner, worker and turn states. One round trip."""
        ...

    async def stored_stream(self, connection_id: str, stream: str) -> StoredStream | None:
        """The stream, if the store has it."""
        ...

    async def stream_after(
        self, connection_id: str, stream: str, after: int
    ) -> list[tuple[int, bytes]]:
        """The kept messages after cursor ``after``, in order."""
        ...

    async def forget_connection(self, connection_id: str) -> None:
        """The connection ended: its streams go."""
        ...

    async def sweep_streams(self, older_than: float) -> None:
        """Remove streams nothing was written to for ``older_than`` seconds."""
        ...
