"""McpServers: the agent-side MCP servers of an ACP session, against real MCP servers."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from waiting import TIMEOUT

pytest.importorskip("mcp")

from acpwire.agent.mcp import McpServerError, McpServers, McpTool
from acpwire.schema import (
    AgentCapabilities,
    EnvVariable,
    HttpHeader,
    McpCapabilities,
    McpServer,
    McpServerAcp,
    McpServerHttp,
    McpServerSse,
    McpServerStdio,
    UnknownMcpServer,
)

pytestmark = pytest.mark.slow  # MCP servers run as Python processes (importing the MCP SDK)

FIXTURE = str(Path(__file__).with_name("mcp_server_fixture.py"))


def fixture_server(name: str = "fx", **env: str) -> McpServerStdio:
    return McpServerStdio(
        name=name,
        command=sys.executable,
        args=[FIXTURE],
        env=[EnvVariable(name=k, value=v) for k, v in env.items()],
    )


def python_server(name: str, code: str, *args: str) -> McpServerStdio:
    return McpServerStdio(name=name, command=sys.executable, args=["-c", code, *args], env=[])


def assert_gone(pid: int) -> None:
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_tools_calls_env_cwd_and_close(tmp_path: Path) -> None:
    mcp = McpServers([fixture_server(FIXTURE_TOKEN="t0k3n")], cwd=tmp_path)
    async with mcp:
        assert mcp.failures == {}
        assert mcp.servers == ["fx"]
        tools = {tool.name: tool for tool in mcp.tools()}
        assert {"add", "fail", "pid", "getenv", "cwd"} <= set(tools)
        add = tools["add"]
        assert isinstance(add, McpTool)
        assert add.server == "fx"
        assert add.description == "Add two integers."
        assert add.input_schema["type"] == "object"
        assert set(add.input_schema["required"]) == {"a", "b"}
        assert mcp.tools("fx") == mcp.tools()
        assert mcp.tools("other") == []

        result = await mcp.call_tool("fx", "add", {"a": 2, "b": 3})
        assert result.text == "5"
        assert result.structured == {"result": 5}
        assert result.is_error is False
        assert result.content == [{"type": "text", "text": "5"}]

        failed = await mcp.call_tool("fx", "fail")
        assert failed.is_error is True
        assert "fail" in failed.text

        # The client's env is laid over the agent's environment.
        assert (await mcp.call_tool("fx", "getenv", {"name": "FIXTURE_TOKEN"})).text == "t0k3n"
        assert (await mcp.call_tool("fx", "getenv", {"name": "PATH"})).text == os.environ["PATH"]
        assert Path((await mcp.call_tool("fx", "cwd")).text) == tmp_path

        pid = (await mcp.call_tool("fx", "pid")).structured["result"]
        os.kill(pid, 0)  # alive while the session is open

    assert_gone(pid)
    assert mcp.servers == []
    assert mcp.tools() == []
    with pytest.raises(McpServerError):
        await mcp.call_tool("fx", "add", {"a": 1, "b": 1})
    await mcp.aclose()  # idempotent


async def test_failing_servers_are_recorded_and_the_others_work() -> None:
    servers = [
        McpServerStdio(name="missing", command="/nonexistent/mcp-server-xyz", args=[], env=[]),
        python_server("dies", "import sys; print('no config file', file=sys.stderr); sys.exit(3)"),
        fixture_server("fx"),
        fixture_server("fx2"),
    ]
    async with McpServers(servers) as mcp:
        assert set(mcp.failures) == {"missing", "dies"}
        assert "not found" in mcp.failures["missing"]
        assert "/nonexistent/mcp-server-xyz" in mcp.failures["missing"]
        assert "failed to start" in mcp.failures["dies"]
        assert "no config file" in mcp.failures["dies"]  # the server's stderr tail
        assert mcp.servers == ["fx", "fx2"]
        assert {tool.server for tool in mcp.tools()} == {"fx", "fx2"}
        assert (await mcp.call_tool("fx2", "add", {"a": 40, "b": 2})).text == "42"

        with pytest.raises(McpServerError, match=r"'dies' is unavailable.*no config file"):
            await mcp.call_tool("dies", "add", {"a": 1, "b": 2})
        with pytest.raises(McpServerError, match=r"no MCP server named 'nope'.*'fx', 'fx2'"):
            await mcp.call_tool("nope", "add", {"a": 1, "b": 2})

        unknown_tool = await mcp.call_tool("fx", "no_such_tool")
        assert unknown_tool.is_error


async def test_hanging_server_times_out_and_is_stopped(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    code = "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); sys.stdin.read()"
    hang = python_server("hang", code, str(pid_file))
    async with McpServers([hang], startup_timeout=1.0) as mcp:
        assert mcp.servers == []
        assert "did not finish starting within 1 s" in mcp.failures["hang"]
        with pytest.raises(McpServerError, match="did not finish starting"):
            await mcp.call_tool("hang", "add")
    assert_gone(int(pid_file.read_text()))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
async def test_cancelled_start_stops_the_servers(tmp_path: Path) -> None:
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    code = "import os, sys; open(sys.argv[1], 'w').write(str(os.getpid())); sys.stdin.read()"
    mcp = McpServers([python_server("hang", code, str(fifo))], startup_timeout=60)
    start = asyncio.create_task(mcp.start())
    pid = int(await asyncio.to_thread(fifo.read_text))  # the server is running
    start.cancel()
    with pytest.raises(asyncio.CancelledError):
        await start
    assert_gone(pid)


async def test_server_stderr_stays_off_stdout(capfd: pytest.CaptureFixture[str]) -> None:
    noise = "fixture-stderr-noise-4711"
    async with McpServers([fixture_server(FIXTURE_STDERR_NOISE=noise)]) as mcp:
        assert (await mcp.call_tool("fx", "add", {"a": 1, "b": 1})).text == "2"
    captured = capfd.readouterr()
    assert noise not in captured.out


async def test_unsupported_kinds_capabilities_and_duplicates() -> None:
    servers: list[McpServer] = [
        UnknownMcpServer("websocket", {"type": "websocket", "name": "ws", "url": "ws://x"}),
        UnknownMcpServer(None, {"odd": True}),
        McpServerAcp(name="tunnel", server_id="s1"),
        McpServerHttp(name="web", url="http://127.0.0.1:9/mcp", headers=[]),
        McpServerSse(name="events", url="http://127.0.0.1:9/sse", headers=[]),
    ]
    caps = AgentCapabilities(mcp_capabilities=McpCapabilities(http=False))
    # Nothing to connect: no SDK call at all, every entry is a recorded failure.
    async with McpServers(servers, capabilities=caps) as mcp:
        assert mcp.servers == []
        assert "unsupported MCP server type 'websocket'" in mcp.failures["ws"]
        assert "unsupported" in mcp.failures["#1"]
        assert "over ACP are unstable ACP: the agent must opt in" in mcp.failures["tunnel"]
        assert "mcpCapabilities.http" in mcp.failures["web"]
        assert "mcpCapabilities.sse" in mcp.failures["events"]

    async with McpServers([fixture_server("fx"), fixture_server("fx")]) as mcp:
        assert mcp.servers == ["fx"]
        assert "duplicate MCP server name 'fx'" in mcp.failures["fx (#1)"]


async def test_missing_sdk_gives_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)
    mcp = McpServers([fixture_server()])
    with pytest.raises(ImportError, match=r"acpwire\[mcp\]"):
        await mcp.start()
    await mcp.aclose()


@pytest.fixture
async def http_server_port() -> AsyncIterator[int]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        FIXTURE,
        "http",
        "X-Fixture-Token=secret",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), TIMEOUT)
        assert line.startswith(b"PORT "), line
        yield int(line.split()[1])
    finally:
        proc.terminate()
        await proc.wait()


async def test_streamable_http_server(http_server_port: int) -> None:
    url = f"http://127.0.0.1:{http_server_port}/mcp"
    servers = [
        McpServerHttp(
            name="web", url=url, headers=[HttpHeader(name="X-Fixture-Token", value="secret")]
        ),
        McpServerHttp(name="no-token", url=url, headers=[]),
    ]
    caps = McpCapabilities(http=True)
    async with McpServers(servers, capabilities=caps, startup_timeout=10) as mcp:
        assert mcp.servers == ["web"]
        assert "no-token" in mcp.failures
        assert "401 Unauthorized" in mcp.failures["no-token"]
        assert {tool.name for tool in mcp.tools("web")} >= {"add", "fail"}
        result = await mcp.call_tool("web", "add", {"a": 20, "b": 22})
        assert (result.text, result.structured, result.is_error) == ("42", {"result": 42}, False)
        assert (await mcp.call_tool("web", "fail")).is_error
