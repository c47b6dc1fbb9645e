"""The endpoint's WebSocket profile (the RFD's), checked live: the upgrade (101 and
``Acp-Connection-Id``), messages as text frames each way, a binary frame that must be
ignored while the socket stays open."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import msgspec

from ..._waits import within
from ..agents.driver import PING_METHOD
from ..registry import Group
from ..wire import as_dict
from .stage import REFUSED_CREDENTIALS, EndpointStage
from .target import initialize_request, rpc

__all__ = ["GROUP", "WS_BINARY", "WS_MESSAGES", "WS_UPGRADE", "WebSocketChecks"]

GROUP = Group("endpoint", stage="websocket")
WS_UPGRADE = GROUP.check(
    "ws-upgrade",
    "GET with Upgrade: websocket is upgraded, Acp-Connection-Id in the 101",
    proves=("RFD-WS-001",),
)
WS_MESSAGES = GROUP.check(
    "ws-messages",
    "initialize, session/new and their answers travel as text frames",
    proves=("RFD-WS-002",),
)
WS_BINARY = GROUP.check(
    "ws-binary", "a binary frame is ignored and the socket stays open", proves=("RFD-WS-003",)
)

BINARY_ID = "ws-binary"
"""The id of the request sent in a binary frame (an answer to it means it was read)."""


class WebSocketChecks(EndpointStage):
    """The ``websocket`` stage of an endpoint check."""

    async def run(self) -> None:
        try:
            await self._upgrade()
        finally:
            self.reach.tried("websocket")

    async def _upgrade(self) -> None:
        client, errors = _websockets()
        try:
            ws = await client.connect(
                self.target.ws_url,
                additional_headers=self.target.request_headers(),
                open_timeout=self.options.quick,
                ssl=self.target.ssl_context(),
                compression=None,
            )
        except errors.InvalidStatus as exc:
            status = exc.response.status_code
            if status in REFUSED_CREDENTIALS:
                why = self.refused_credentials("the WebSocket upgrade", status)
                return self.v.skip_stage("websocket", why)
            self.v.fail(WS_UPGRADE, f"the upgrade was answered HTTP {status}")
            return self.v.skip_stage("websocket", "no WebSocket")
        except (OSError, asyncio.TimeoutError, errors.InvalidHandshake) as exc:
            self.v.fail(WS_UPGRADE, f"the upgrade failed: {exc}")
            return self.v.skip_stage("websocket", "no WebSocket")
        self.reach.tried("websocket")
        try:
            await self._websocket(ws)
        finally:
            with contextlib.suppress(Exception):
                await within(ws.close(), self.options.quick)
            # Python 3.10's TLS transport can stay open after the closing handshake.
            transport = getattr(ws, "transport", None)
            if transport is not None and not transport.is_closing():
                transport.abort()

    async def _websocket(self, ws: Any) -> None:
        connection_id = ws.response.headers.get("Acp-Connection-Id") if ws.response else None
        if connection_id:
            self.reach.connection_ids.append(connection_id)
        if not self.v.wants_stage("websocket"):
            return
        if connection_id:
            self.v.record(WS_UPGRADE, "pass")
        else:
            self.v.fail(WS_UPGRADE, "no Acp-Connection-Id in the 101 headers")
        frames = _Frames(ws)
        problems: list[str] = []
        await ws.send(initialize_request("ws-init").decode())
        if await frames.answer("ws-init", self.options.timeout) is None:
            problems.append(f"initialize: {frames.describe()}")
        else:
            params: dict[str, Any] = {"cwd": self.cwd, "mcpServers": []}
            await ws.send(rpc("session/new", params, "ws-new").decode())
            if await frames.answer("ws-new", self.options.timeout) is None:
                problems.append(f"session/new: {frames.describe()}")
        if frames.binary:
            problems.append(f"{frames.binary} binary frame(s) from the server")
        self.v.verdict(WS_MESSAGES, problems, "text frames both ways")
        if problems:
            return self.v.record(WS_BINARY, "skip", "the WebSocket did not carry messages")
        await ws.send(rpc(PING_METHOD, {}, BINARY_ID))  # bytes: a binary frame
        answered = True
        for request_id in ("ws-after-1", "ws-after-2"):
            with contextlib.suppress(Exception):
                await ws.send(rpc(PING_METHOD, {}, request_id).decode())
            answered = answered and await frames.answer(request_id, self.options.quick) is not None
        if BINARY_ID in frames.answered:
            self.v.fail(WS_BINARY, "the request in a binary frame was answered")
        elif not answered:
            self.v.fail(WS_BINARY, f"after a binary frame: {frames.describe()}")
        else:
            self.v.record(WS_BINARY, "pass")


def _websockets() -> tuple[Any, Any]:
    try:
        import websockets.asyncio.client as client
        import websockets.exceptions as errors
    except ImportError as exc:  # pragma: no cover - the remote extra is a dev dependency
        from .target import INSTALL_HINT

        raise ImportError(INSTALL_HINT) from exc
    return client, errors


class _Frames:
    """What came on a checker's WebSocket: answers by id, binary frames, how it ended."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.answered: dict[str, dict[str, Any]] = {}
        self.binary = 0
        self.closed: str | None = None

    async def answer(self, request_id: str, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while request_id not in self.answered and self.closed is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                frame = await within(self.ws.recv(), remaining)
            except asyncio.TimeoutError:
                break
            except Exception as exc:
                self.closed = f"the socket closed ({exc})"
                break
            if isinstance(frame, bytes):
                self.binary += 1
                continue
            try:
                message = as_dict(msgspec.json.decode(frame))
            except msgspec.DecodeError:
                continue
            if (
                message is not None
                and "method" not in message
                and isinstance(message.get("id"), str)
            ):
                self.answered[message["id"]] = message
        return self.answered.get(request_id)

    def describe(self) -> str:
        return self.closed or "no answer in time"
