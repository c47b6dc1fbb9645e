"""Baseline agent: hand-written newline-delimited JSON-RPC with orjson and asyncio.

No framework, no validation, no models: the least a Python program has to do to
answer ``initialize``, ``session/new`` and ``session/prompt`` over stdio. Prompt
``stream N`` sends N ``agent_message_chunk`` updates of 64 bytes of text first.
``bench_stdio.py`` compares every ACP implementation with this pair (see
``raw_client.py``).
"""

from __future__ import annotations

import asyncio
import sys

import orjson

TEXT64 = "acp-bench " * 6 + "data"  # same as _scenario.TEXT64 (kept import-free for start-up)
NL = orjson.OPT_APPEND_NEWLINE


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**31 - 1)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    wtransport, wprotocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout
    )
    # The same back-pressure policy as acpwire's transport (wait only above 1 MiB of
    # unsent data); asyncio's default (pause at 64 KiB) would make this baseline
    # stall on flow control during a stream rather than measure its own cost.
    wtransport.set_write_buffer_limits(high=1024 * 1024)
    writer = asyncio.StreamWriter(wtransport, wprotocol, reader, loop)
    dumps, loads = orjson.dumps, orjson.loads
    sessions = 0
    tail = b""
    while True:
        chunk = await reader.read(256 * 1024)
        if not chunk:
            break
        lines = (tail + chunk).split(b"\n")
        tail = lines.pop()
        for line in lines:
            if not line:
                continue
            msg = loads(line)
            method = msg.get("method")
            if "id" not in msg:
                continue  # a notification (session/cancel, ...): nothing to do here
            if method == "session/prompt":
                params = msg["params"]
                text = params["prompt"][0].get("text", "")
                if text.startswith("stream "):
                    sid = params["sessionId"]
                    for _ in range(int(text[7:])):
                        writer.write(
                            dumps(
                                {
                                    "jsonrpc": "2.0",
                                    "method": "session/update",
                                    "params": {
                                        "sessionId": sid,
                                        "update": {
                                            "sessionUpdate": "agent_message_chunk",
                                            "content": {"type": "text", "text": TEXT64},
                                        },
                                    },
                                },
                                option=NL,
                            )
                        )
                        await writer.drain()
                answer = {"jsonrpc": "2.0", "id": msg["id"], "result": {"stopReason": "end_turn"}}
            elif method == "session/new":
                sessions += 1
                answer = {
                    "jsonrpc": "2.0",
                    "id": msg["id"],
                    "result": {"sessionId": f"raw-{sessions}"},
                }
            elif method == "initialize":
                answer = {
                    "jsonrpc": "2.0",
                    "id": msg["id"],
                    "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []},
                }
            else:
                answer = {
                    "jsonrpc": "2.0",
                    "id": msg["id"],
                    "error": {"code": -32601, "message": f"Method not found: {method}"},
                }
            writer.write(dumps(answer, option=NL))
            await writer.drain()


if __name__ == "__main__":
    asyncio.run(main())
