"""One update per message: merging consecutive text chunks, in the history and (opt-in) live.

Agents stream a message as many ``agent_message_chunk`` (or
``agent_thought_chunk``) updates; a client appends their texts. Kept one record
per chunk, a session of 2,000 one-word chunks replays as 2,000 notifications,
and clients draw each one (Toad took about two minutes). So:

* **In the history, merged on write.** :class:`ChunkRun` gathers a run of
  chunks of one message in memory, and the app's
  :class:`~acpwire.agent.history.HistoryWriter` writes it as one record when
  the run ends (at the next update that does not belong to it) or when a
  write-behind batch is committed, whichever comes first; a message streamed
  for longer than a batch window is then a few records with one ``messageId``.
  The store holds a record per message (or per window), not one per token.
* **On replay, merged again on read** by :func:`coalesce`, for messages
  committed across several batches and histories written one chunk per
  record (older versions, other writers through
  :meth:`~acpwire.store.SessionStore.append`).
* **Live, opt-in.** :class:`LiveChunks` holds a message's chunks for up to an
  interval and sends them as one update, for agents whose model streams tiny
  pieces (``AgentApp(chunk_interval=...)``). Any other update sends the held
  text first, so the order the client sees never changes.

Chunks merge only when they are of the same kind, carry the same
``messageId`` and ``_meta``, and hold plain text (no annotations or block
``_meta``, which could not be merged without loss). A merged text stops
growing at :data:`MERGED_TEXT_LIMIT` characters and the next chunk starts a
new run, so no merged update is unboundedly large.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, cast

from .. import schema as s
from ..protocol.errors import ConnectionClosedError
from ..schema import UNSET

__all__ = [
    "MERGED_TEXT_LIMIT",
    "ChunkRun",
    "LiveChunks",
    "coalesce",
    "model_run_key",
    "run_key",
]

log = logging.getLogger("acpwire.agent")

MERGED_TEXT_LIMIT = 64 * 1024
"""Characters a merged chunk may hold; a larger message becomes several updates."""

_MERGEABLE = frozenset({"agent_message_chunk", "agent_thought_chunk"})
_CHUNK_FIELDS = frozenset({"sessionUpdate", "content", "messageId", "_meta"})

RunKey = tuple[Any, ...]
"""What chunks of one run have in common: kind, message id and ``_meta``."""


def run_key(update: Mapping[str, Any]) -> RunKey | None:
    """The run a recorded (wire form) update may join, or None if it never merges."""
    kind = update.get("sessionUpdate")
    if kind not in _MERGEABLE or not _CHUNK_FIELDS.issuperset(update):
        return None
    content = update.get("content")
    if not isinstance(content, dict):
        return None
    block = cast("dict[str, Any]", content)
    if block.get("type") != "text" or set(block) != {"type", "text"}:
        return None
    return (kind, update.get("messageId"), update.get("_meta"))


class ChunkRun:
    """Consecutive text chunks of one message, in wire form, merged into one update."""

    def __init__(self, update: Mapping[str, Any], key: RunKey) -> None:
        self.key = key
        self.first = dict(update)
        text = str(update["content"]["text"])
        self.parts = [text]
        self.size = len(text)

    def take(self, update: Mapping[str, Any], key: RunKey | None) -> bool:
        """Add ``update`` to the run if it belongs there (and fits); True if it was taken."""
        if key is None or key != self.key:
            return False
        return self.add(key, str(update["content"]["text"]))

    def add(self, key: RunKey, text: str) -> bool:
        """Add the text of a chunk whose :func:`run_key` is ``key``, if it belongs here and fits."""
        if key != self.key or self.size + len(text) > MERGED_TEXT_LIMIT:
            return False
        self.parts.append(text)
        self.size += len(text)
        return True

    def merged(self) -> dict[str, Any]:
        """The run as one update."""
        if len(self.parts) == 1:
            return self.first
        return {**self.first, "content": {"type": "text", "text": "".join(self.parts)}}


def coalesce(updates: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The updates with each run of chunks of one message merged into one."""
    run: ChunkRun | None = None
    for update in updates:
        key = run_key(update)
        if run is not None and run.take(update, key):
            continue
        if run is not None:
            yield run.merged()
            run = None
        if key is None:
            yield update
        else:
            run = ChunkRun(update, key)
    if run is not None:
        yield run.merged()


_MERGED_KINDS: Mapping[type, str] = {
    s.AgentMessageChunk: "agent_message_chunk",
    s.AgentThoughtChunk: "agent_thought_chunk",
}


def model_run_key(update: s.SessionUpdate) -> tuple[RunKey, str] | None:
    """:func:`run_key` of ``update``'s wire form and its text, read from the model.

    For the chunks a turn streams (``say``/``think``), so recording one needs no
    wire form; None for everything else, which is recorded through its wire form.
    """
    kind = _MERGED_KINDS.get(type(update))
    if kind is None or not isinstance(update, s.ContentChunk):
        return None
    block = update.content
    if type(block) is not s.TextContent or update.meta is not UNSET:
        return None
    if block.annotations is not UNSET or block.meta is not UNSET:
        return None
    message_id = update.message_id
    return (kind, None if message_id is UNSET else message_id, None), block.text


def _live_key(update: s.SessionUpdate) -> RunKey | None:
    if not isinstance(update, (s.AgentMessageChunk, s.AgentThoughtChunk)):
        return None
    block = update.content
    if not isinstance(block, s.TextContent) or block.annotations is not UNSET:
        return None
    if block.meta is not UNSET:
        return None
    return (type(update), update.message_id, update.meta)


Send = Callable[[s.SessionUpdate], Awaitable[None]]


class LiveChunks:
    """Sends a turn's updates, holding text chunks of one message for up to ``interval`` seconds.

    Every update of the turn goes through :meth:`send`. Held text is sent
    before any other update, when the interval since the first held chunk has
    passed, when it reaches :data:`MERGED_TEXT_LIMIT`, and by :meth:`aclose`.
    """

    def __init__(self, send: Send, interval: float) -> None:
        if interval <= 0:
            raise ValueError(f"chunk interval must be positive, got {interval!r}")
        self._send = send
        self._interval = interval
        self._lock = asyncio.Lock()  # one sender at a time: the handler or the timer
        self._held: s.AgentMessageChunk | s.AgentThoughtChunk | None = None
        self._key: RunKey | None = None
        self._parts: list[str] = []
        self._size = 0
        self._timer: asyncio.Task[None] | None = None

    async def send(self, update: s.SessionUpdate) -> None:
        """Send ``update``, or hold it if it is a text chunk that can wait."""
        key = _live_key(update)
        async with self._lock:
            if key is not None:
                chunk = cast("s.AgentMessageChunk | s.AgentThoughtChunk", update)
                text = cast("s.TextContent", chunk.content).text
                if self._held is not None and key == self._key:
                    if self._size + len(text) <= MERGED_TEXT_LIMIT:
                        self._parts.append(text)
                        self._size += len(text)
                        return
                await self._flush()
                self._held = chunk
                self._key, self._parts, self._size = key, [text], len(text)
                self._timer = asyncio.ensure_future(self._flush_later())
                return
            await self._flush()
            await self._send(update)

    async def _flush(self) -> None:
        """Send what is held (the lock is held by the caller)."""
        held, self._held = self._held, None
        timer, self._timer = self._timer, None
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()
        if held is None:
            return
        if len(self._parts) > 1:
            text = "".join(self._parts)
            held = type(held)(
                content=s.TextContent(text=text), message_id=held.message_id, meta=held.meta
            )
        self._parts, self._size = [], 0
        await self._send(held)

    async def _flush_later(self) -> None:
        await asyncio.sleep(self._interval)
        try:
            async with self._lock:
                await self._flush()
        except (ConnectionClosedError, OSError):
            pass
        except Exception:
            log.exception("sending held message chunks failed")

    async def aclose(self) -> None:
        """Send what is held now; nothing is held afterwards."""
        with contextlib.suppress(ConnectionClosedError, OSError):
            async with self._lock:
                await self._flush()
