"""Shared plumbing of the acpwire interop peers (``acpwire_agent.py``, ``acpwire_client.py``).

* :class:`RecordingTransport` wraps any acpwire transport. It can append every
  message, both directions, to a JSON-lines wire log (``{"dir": "out"|"in",
  "line": "<json text>"}``) so the interop tests can validate what acpwire put on
  the wire against the official JSON Schema; and it tells a caller the JSON-RPC id
  of the request it just sent (see :func:`capture_request_ids`), which is what a
  peer needs to send ``$/cancel_request`` for its own request while still waiting
  for the real answer. acpwire's own API only sends ``$/cancel_request`` when the
  awaiting task is abandoned, and then the answer is never seen.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

_request_ids: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar(
    "acpwire_peer_request_ids", default=None
)


class RecordingTransport:
    """A transport that forwards to ``inner`` and records the wire (optionally)."""

    def __init__(self, inner: Any, log_path: str | None = None) -> None:
        self.inner = inner
        self._log = open(log_path, "a", encoding="utf-8") if log_path else None
        self._lock = threading.Lock()

    def _record(self, direction: str, message: bytes) -> None:
        if self._log is None:
            return
        text = message.decode("utf-8", "replace")
        with self._lock:
            self._log.write(json.dumps({"dir": direction, "line": text}) + "\n")
            self._log.flush()

    async def send(self, message: bytes) -> None:
        holder = _request_ids.get()
        if holder is not None:
            try:
                obj = json.loads(message)
            except ValueError:
                obj = None
            if isinstance(obj, dict) and "method" in obj and "id" in obj:
                holder.append(obj["id"])
        self._record("out", message)
        await self.inner.send(message)

    async def receive(self) -> Any:
        message = await self.inner.receive()
        if isinstance(message, (bytes, bytearray)):
            self._record("in", bytes(message))
        return message

    async def close(self) -> None:
        try:
            await self.inner.close()
        finally:
            if self._log is not None:
                with self._lock:
                    self._log.close()
                self._log = None

    def __getattr__(self, name: str) -> Any:  # pid, returncode, stderr_tail, ...
        return getattr(self.inner, name)


def start_with_ids(make: Callable[[], Awaitable[T]]) -> tuple[asyncio.Task[T], list[Any]]:
    """Run ``make()`` (which sends one request) in a task; the list receives the
    id(s) of the request(s) that task puts on the wire."""
    holder: list[Any] = []

    async def runner() -> T:
        _request_ids.set(holder)
        return await make()

    return asyncio.ensure_future(runner()), holder
