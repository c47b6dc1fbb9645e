"""Benchmark client driver on the official Python SDK (``agent-client-protocol==0.12.1``).

Runs on the SDK's own virtual environment; ``bench_stdio.py`` starts it as

    <pysdk python> pysdk_client.py --plan '<json>'

It spawns ``pysdk_agent.py`` (with the same python) through
``acp.spawn_agent_process``, runs ``_scenario.run_plan`` and prints the figures as
one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _scenario import CWD, DriverBase, run_plan
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block

AGENT = Path(__file__).resolve().parent / "pysdk_agent.py"


class BenchClient:
    def __init__(self, driver: DriverBase) -> None:
        self.driver = driver

    def on_connect(self, conn: Any) -> None:
        pass

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.driver.on_update()


class PysdkDriver(DriverBase):
    def __init__(self) -> None:
        super().__init__()
        self._cm: Any = None
        self.conn: Any = None

    async def start(self) -> None:
        self._cm = spawn_agent_process(
            BenchClient(self),
            sys.executable,
            str(AGENT),
            env=dict(os.environ),
            transport_kwargs={"stderr": None},
        )
        self.conn, _process = await self._cm.__aenter__()

    async def initialize(self) -> None:
        await self.conn.initialize(protocol_version=PROTOCOL_VERSION)

    async def new_session(self) -> str:
        return str((await self.conn.new_session(cwd=CWD, mcp_servers=[])).session_id)

    async def prompt(self, session_id: str, text: str) -> None:
        await self.conn.prompt(session_id=session_id, prompt=[text_block(text)])

    async def close(self) -> None:
        if self._cm is not None:
            await self._cm.__aexit__(None, None, None)
            self._cm = None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plan", required=True)
    args = parser.parse_args()
    result = asyncio.run(run_plan(PysdkDriver, json.loads(args.plan)))
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
