#!/usr/bin/env python3
"""Interop peer AGENT: acpwire's demo agent (the high tier) with its wire recorded.

    .venv/bin/python tests/interop/peers/acpwire_demo_agent.py --store URL [--unstable] [--wire-log FILE]

The same app as ``python -m acpwire.demo``, served over stdio through the
recording transport of ``_acpwire_wire`` so a test can validate every message.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _acpwire_wire import RecordingTransport

from acpwire.demo.agent import build_app
from acpwire.transports.stdio import stdio_transport


async def serve(store: str, unstable: bool, wire_log: str | None) -> None:
    app = build_app(store, unstable=unstable)
    try:
        await app.serve(RecordingTransport(await stdio_transport(), wire_log))
    finally:
        await app.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--unstable", action="store_true")
    parser.add_argument("--wire-log")
    args = parser.parse_args()
    asyncio.run(serve(args.store, args.unstable, args.wire_log))


if __name__ == "__main__":
    main()
