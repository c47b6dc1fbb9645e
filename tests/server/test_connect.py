"""`acp connect URL`: the stdio <-> remote bridge editors spawn as their agent command.
Real processes: `acp serve --demo`, `acp connect`, and `acp check` driving it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from waiting import TIMEOUT, wait_until

from acpwire import schema as s
from acpwire.client.toolkit import ToolkitClient
from acpwire.protocol.errors import ConnectionLost
from acpwire.transports.subprocess import spawn

from ._serve import ROOT, Serve, acp_serve

pytestmark = pytest.mark.slow  # acp serve, acp connect and acp chat run as processes

TOKEN = "connect-token-0123456789abcdef"
ACP = [sys.executable, "-m", "acpwire.cli.main"]
ENV = {"PYTHONPATH": str(ROOT / "src"), "ACP_SERVE_TOKEN": ""}


def _serving(data_dir: Path, port: str = "0") -> AbstractAsyncContextManager[Serve]:
    return acp_serve(
        "--demo", env={"ACPWIRE_DATA_DIR": str(data_dir), "ACP_SERVE_TOKEN": TOKEN}, port=port
    )


async def _check(agent: list[str], data_dir: Path) -> dict[str, str]:
    """``acp check --json -- AGENT``: check name -> status."""
    proc = await asyncio.create_subprocess_exec(
        *ACP,
        "check",
        "--json",
        # Waits a loaded machine meets (acp connect adds a process and a network hop to
        # every answer and to the exit); only a failing check waits them out.
        *("--quick-timeout", "10", "--grace", "10"),
        "--",
        *agent,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, **ENV, "ACP_TOKEN": TOKEN, "ACPWIRE_DATA_DIR": str(data_dir)},
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 4 * TIMEOUT)  # a whole `acp check` run
    report = json.loads(out)
    return {r["check"]: r["status"] for r in report["results"]}


async def test_acp_check_through_acp_connect_finds_what_it_finds_over_stdio(
    tmp_path: Path,
) -> None:
    local = await _check([*ACP, "demo-agent"], tmp_path / "local")
    assert list(local.values()).count("pass") > 20
    async with _serving(tmp_path / "remote") as serve:
        over_ws = await _check([*ACP, "connect", serve.url], tmp_path)
        over_http = await _check([*ACP, "connect", "--http", serve.url], tmp_path)
    assert over_ws == local
    assert over_http == local


async def test_only_protocol_reaches_stdout_and_stdin_closing_ends_it(tmp_path: Path) -> None:
    async with _serving(tmp_path) as serve:
        proc = await asyncio.create_subprocess_exec(
            *ACP,
            "connect",
            "-v",  # logs go to stderr, never stdout
            serve.url,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **ENV, "ACP_TOKEN": TOKEN},
        )
        assert proc.stdin is not None and proc.stdout is not None
        init = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
        proc.stdin.write(init + b"not json\n")
        await proc.stdin.drain()
        # The endpoint answers the line it cannot parse itself (docs/security.md), maybe
        # before the agent answers initialize.
        lines = [await asyncio.wait_for(proc.stdout.readline(), TIMEOUT) for _ in range(2)]
        answer, parse_error = sorted(map(json.loads, lines), key=lambda m: m["id"] is None)
        assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1
        assert parse_error["id"] is None and parse_error["error"]["code"] == -32700
        proc.stdin.close()
        out, _ = await asyncio.wait_for(proc.communicate(), TIMEOUT)
        assert proc.returncode == 0
        assert out == b""  # nothing after the two answers


async def test_a_refused_token_exits_1_with_the_reason_on_stderr(tmp_path: Path) -> None:
    async with _serving(tmp_path) as serve:
        proc = await asyncio.create_subprocess_exec(
            *ACP,
            "connect",
            "--token",
            "wrong-token-0123456789",
            "--header",
            "X-Extra: 1",
            serve.url,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **ENV},
        )
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
        assert proc.returncode == 1 and out == b"" and b"401" in err


@pytest.mark.parametrize("http", [False, True], ids=["websocket", "http"])
async def test_the_bridge_reattaches_the_session_when_the_server_restarts(
    tmp_path: Path, http: bool
) -> None:
    data = tmp_path / "data"
    async with _serving(data) as first:
        port = first.url.rsplit(":", 1)[1].split("/")[0]
        args = ["connect", *(["--http"] if http else []), first.url]
        transport = await spawn(ACP[0], [*ACP[1:], *args], env={**ENV, "ACP_TOKEN": TOKEN})
        client = ToolkitClient()
        client.connect(transport)
        await asyncio.wait_for(client.initialize(), TIMEOUT)
        state = await asyncio.wait_for(client.new_session(tmp_path), TIMEOUT)
        turn = asyncio.ensure_future(client.prompt(state.session_id, "slow 30"))
        await wait_until(lambda: state.turn_running and state.messages, "the turn is running")
        first.proc.send_signal(signal.SIGKILL)
        await asyncio.wait_for(first.proc.wait(), TIMEOUT)
        async with _serving(data, port):
            with pytest.raises(ConnectionLost, match="session re-attached"):
                await asyncio.wait_for(turn, TIMEOUT)
            result = await asyncio.wait_for(
                client.prompt(state.session_id, [s.TextContent(text="stream 2")]), TIMEOUT
            )
            assert result.stop_reason == "end_turn"
            await client.close()
        assert transport.returncode == 0


@pytest.mark.parametrize("http", [False, True], ids=["websocket", "http"])
async def test_acp_chat_talks_to_a_remote_agent_by_url(tmp_path: Path, http: bool) -> None:
    async with _serving(tmp_path / "data") as serve:
        proc = await asyncio.create_subprocess_exec(
            *ACP,
            "chat",
            "--url",
            serve.url,
            *(["--http"] if http else []),
            "--cwd",
            str(tmp_path),
            "--json",
            "--prompt",
            "stream 2",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **ENV, "ACP_TOKEN": TOKEN},
        )
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
        assert proc.returncode == 0, err.decode()
        lines = [json.loads(line) for line in out.decode().splitlines()]
        texts = [
            line["update"]["content"]["text"]
            for line in lines
            if line.get("update", {}).get("sessionUpdate") == "agent_message_chunk"
        ]
        assert "chunk 2 of 2" in "".join(texts)
        assert lines[-1] == {"stopReason": "end_turn"}


async def test_acp_chat_with_a_url_and_a_command_is_a_usage_error() -> None:
    proc = await asyncio.create_subprocess_exec(
        *ACP,
        "chat",
        "--url",
        "ws://127.0.0.1:1/acp",
        "--prompt",
        "x",
        "--",
        "agent",
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **ENV},
    )
    _, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    assert proc.returncode == 2 and b"either --url or an agent command" in err


@pytest.mark.parametrize("http", [False, True], ids=["websocket", "http"])
async def test_the_agent_answers_for_a_session_nobody_owns(tmp_path: Path, http: bool) -> None:
    """``acp connect`` to ``acp serve -- AGENT`` (one token): a prompt to a session the
    agent does not have gets the agent's own error, unchanged, and deleting one succeeds as
    the agent says (the endpoint answered both with -32002 over HTTP). Another principal's
    sessions stay refused: tests/server/test_isolation.py."""
    agent = ["--", sys.executable, str(ROOT / "tests" / "server" / "lenient_agent.py")]
    async with acp_serve(*agent, str(tmp_path), env={"ACP_SERVE_TOKEN": TOKEN}) as serve:
        proc = await asyncio.create_subprocess_exec(
            *ACP,
            "connect",
            *(["--http"] if http else []),
            serve.url,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, **ENV, "ACP_TOKEN": TOKEN},
        )
        assert proc.stdin is not None and proc.stdout is not None
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/prompt",
                "params": {"sessionId": "nope", "prompt": [{"type": "text", "text": "hi"}]},
            },
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/delete",
                "params": {"sessionId": "nope"},
            },
        ):
            proc.stdin.write(json.dumps(message).encode() + b"\n")
        await proc.stdin.drain()
        lines = [await asyncio.wait_for(proc.stdout.readline(), TIMEOUT) for _ in range(3)]
        answers = {m["id"]: m for m in map(json.loads, lines)}
        proc.stdin.close()
        await asyncio.wait_for(proc.communicate(), TIMEOUT)
    assert answers[2]["error"] == {"code": -32602, "message": "unknown session nope"}
    assert answers[3] == {"jsonrpc": "2.0", "id": 3, "result": {}}
