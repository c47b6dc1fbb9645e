#!/usr/bin/env python3
"""Interop peer AGENT: acpwire's demo agent (an ``AgentApp`` serving v1 and v2) on stdio.

    .venv/bin/python tests/interop/peers/acpwire_demo_v2_agent.py [--wire-log FILE]

Sessions are kept in memory. ``--wire-log`` appends every message of both directions
to FILE (JSON lines), so the tests can validate what acpwire sent against the schema of
the version the connection chose.
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


async def serve(wire_log: str | None) -> None:
    app = build_app("memory:")
    try:
        await app.serve(RecordingTransport(await stdio_transport(), wire_log))
    finally:
        await app.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wire-log", default=None)
    asyncio.run(serve(parser.parse_args().wire_log))


if __name__ == "__main__":
    main()
