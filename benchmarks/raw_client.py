"""Baseline client driver: hand-written newline-delimited JSON-RPC with orjson and asyncio.

The counterpart of ``raw_agent.py``: spawns it, sends requests as orjson-encoded
lines, decodes *every* incoming line with orjson and counts ``session/update``
notifications; a response resolves the future of its request id. Lines are
handled in arrival order, so every update is counted before the response that
follows it resolves (the same guarantee acpwire gives).
"""

from __future__ import annotations

import asyncio
import itertools
import sys
from pathlib import Path
from typing import Any

import orjson
from _scenario import CWD, DriverBase

AGENT = Path(__file__).resolve().parent / "raw_agent.py"


class RawDriver(DriverBase):
    def __init__(self, python: str = sys.executable) -> None:
        super().__init__()
        self.python = python
        self.proc: asyncio.subprocess.Process | None = None
        self._ids = itertools.count()
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._reader_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            self.python,
            str(AGENT),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=2**31 - 1,
        )
        self._reader_task = asyncio.ensure_future(self._read_loop())

    def agent_pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    async def _read_loop(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        read = self.proc.stdout.read
        loads = orjson.loads
        pending = self._pending
        tail = b""
        while True:
            chunk = await read(256 * 1024)
            if not chunk:
                break
            lines = (tail + chunk).split(b"\n")
            tail = lines.pop()
            for line in lines:
                if not line:
                    continue
                msg = loads(line)
                if "method" in msg:
                    if msg["method"] == "session/update":
                        self.on_update()
                    continue
                future = pending.pop(msg.get("id"), None)
                if future is not None and not future.done():
                    if "error" in msg:
                        future.set_exception(RuntimeError(msg["error"]))
                    else:
                        future.set_result(msg.get("result"))
        for future in pending.values():
            if not future.done():
                future.set_exception(ConnectionError("agent closed"))

    async def request(self, method: str, params: Any) -> Any:
        assert self.proc is not None and self.proc.stdin is not None
        request_id = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        writer = self.proc.stdin
        writer.write(
            orjson.dumps(
                {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params},
                option=orjson.OPT_APPEND_NEWLINE,
            )
        )
        await writer.drain()
        return await future

    async def initialize(self) -> None:
        await self.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})

    async def new_session(self) -> str:
        result = await self.request("session/new", {"cwd": CWD, "mcpServers": []})
        return str(result["sessionId"])

    async def prompt(self, session_id: str, text: str) -> None:
        await self.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )

    async def close(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
        if self._reader_task is not None:
            await self._reader_task
