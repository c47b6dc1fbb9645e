"""The acpwire remote endpoint hosting the benchmark agent, for ``bench_remote.py``.

    python _remote_server.py [--websocket-compression]

Serves :class:`acpwire_agent.BenchAgent` (one per connection) with ``asgi_app`` under
hypercorn on ``http://127.0.0.1:PORT/acp`` (HTTP/1.1, h2c and WebSocket on one port),
without authentication (a loopback benchmark), prints ``URL <url>`` on stdout and
runs until SIGTERM.
"""

from __future__ import annotations

import asyncio
import sys
import warnings

from acpwire_agent import BenchAgent

from acpwire.server import Limits, asgi_app
from acpwire.server.runner import bind, serve, url_of


async def main() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no authentication: on purpose, loopback only
        app = asgi_app(BenchAgent, auth=None, limits=Limits(idle_timeout=None))
    sock = bind("127.0.0.1", 0)
    print("URL", url_of(sock, "/acp"), flush=True)
    await serve(app, sock, websocket_compression="--websocket-compression" in sys.argv)


if __name__ == "__main__":
    asyncio.run(main())
