"""What trace context costs an outgoing message: ``python benchmarks/bench_trace.py``.

Times ``Connection.notify`` of one ``session/update`` chunk over a transport that
drops what it is given (so the figures are the engine's own work), three ways:

* ``before``: what ``notify`` did before trace context (encode and send), the baseline;
* ``untraced``: ``notify`` as it is, no trace current (one context variable read more);
* ``traced``: ``notify`` with a trace current (``_meta`` added to a copy of the params).

Prints microseconds per message (best of several rounds) and the ratios to ``before``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from acpwire import schema as s
from acpwire.engine.connection import Connection, Router
from acpwire.engine.trace import use_trace
from acpwire.protocol import messages as wire
from acpwire.protocol.errors import ConnectionClosedError

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class NullTransport:
    async def send(self, message: bytes) -> None:
        pass

    async def receive(self) -> Any:
        await asyncio.Event().wait()

    async def close(self) -> None:
        pass


class Before(Connection):
    """The connection with ``notify`` as it was before trace context."""

    async def notify(self, method: str, params: Any) -> None:
        if self._closed is not None:
            raise ConnectionClosedError(str(self._closed), broken=self._closed.broken)
        await self.transport.send(wire.encode_notification(method, params))


async def timed(conn: Connection, params: Any, n: int) -> float:
    notify = conn.notify
    start = time.perf_counter()
    for _ in range(n):
        await notify("session/update", params)
    return (time.perf_counter() - start) / n * 1e6


async def main(n: int, rounds: int) -> None:
    conn = Connection(NullTransport(), Router({}, {}))  # type: ignore[arg-type]
    old = Before(NullTransport(), Router({}, {}))  # type: ignore[arg-type]
    params = s.SessionNotification(
        session_id="sess_0123456789abcdef",
        update=s.AgentMessageChunk(content=s.TextContent(text="a token or two ")),
    )

    best: dict[str, float] = {"before": 1e9, "untraced": 1e9, "traced": 1e9}
    for _ in range(rounds):
        best["before"] = min(best["before"], await timed(old, params, n))
        best["untraced"] = min(best["untraced"], await timed(conn, params, n))
        with use_trace(TP):
            best["traced"] = min(best["traced"], await timed(conn, params, n))
    for name, us in best.items():
        print(f"{name:>9}: {us:6.3f} µs/message  ({us / best['before']:.3f}x before)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.rounds))
