"""The v2 draft through the remote endpoint: ``acp chat --url --protocol 2`` against
``acp serve --demo`` (real processes, WebSocket and Streamable HTTP) gets a v2 turn,
and a v1 client of the same server still gets v1 (docs/protocol-currency.md)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from waiting import TIMEOUT

from ._serve import acp_serve

pytestmark = pytest.mark.slow  # acp serve --demo runs as a process

TOKEN = "remote-v2-token-0123456789abcdef"


async def chat(url: str, *args: str, data_dir: Path) -> list[dict[str, Any]]:
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "acpwire.cli.main", "chat", "--url", url, "--token", TOKEN),
        *args,
        "--prompt",
        "hello over the network",
        "--json",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "ACPWIRE_DATA_DIR": str(data_dir), "ACP_PROTOCOL": ""},
    )
    out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    assert proc.returncode == 0, err.decode()
    return [json.loads(line) for line in out.decode().splitlines()]


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["update"]["sessionUpdate"] for e in events if "update" in e]


@pytest.mark.parametrize("via", [(), ("--http",)], ids=["websocket", "http"])
async def test_a_v2_client_gets_a_v2_turn_from_a_served_demo_and_a_v1_client_gets_v1(
    tmp_path: Path, via: tuple[str, ...]
) -> None:
    env = {"ACPWIRE_DATA_DIR": str(tmp_path / "server")}
    async with acp_serve("--demo", "--token", TOKEN, env=env) as serve:
        v2 = await chat(serve.url, *via, "--protocol", "2", data_dir=tmp_path / "v2")
        v1 = await chat(serve.url, *via, data_dir=tmp_path / "v1")

    got = kinds(v2)
    assert got[got.index("user_message") + 1] == "state_update"
    idle = [e["update"] for e in v2 if e.get("update", {}).get("state") == "idle"]
    assert idle == [{"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}]
    chunks = [
        e["update"] for e in v2 if e.get("update", {}).get("sessionUpdate") == "agent_message_chunk"
    ]
    assert chunks and all(c["messageId"] for c in chunks)

    assert "state_update" not in kinds(v1) and "user_message" not in kinds(v1)
    assert "agent_message_chunk" in kinds(v1)
    assert v1[-1] == v2[-1] == {"stopReason": "end_turn"}
