"""`acp serve -- AGENT` as a real subprocess: each remote connection gets its own stdio agent
process, and a client that goes away takes its agent process with it."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import sys
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from engine.test_behaviour import RecordingClient
from waiting import TIMEOUT

from acpwire import schema as s
from acpwire.client.connection import ClientSideConnection
from acpwire.protocol.errors import ConnectionClosedError
from acpwire.testing import RecordingTransport, SchemaValidator
from acpwire.transports.base import Transport
from acpwire.transports.http import connect_http
from acpwire.transports.websocket import connect_websocket

from ._serve import ENV_AGENT, PROGRAM, acp_serve, children, wait_gone

pytestmark = pytest.mark.slow  # acp serve runs as a process


@pytest.mark.parametrize("kind", ["websocket", "http"])
async def test_a_stdio_agent_is_served_remotely_and_stopped_when_the_client_leaves(
    kind: str, schema_validator: SchemaValidator
) -> None:
    async with acp_serve("--", sys.executable, str(PROGRAM)) as serve:
        if kind == "websocket":
            inner = await connect_websocket(serve.ws_url, token=serve.token)
        else:
            inner = await connect_http(serve.url, token=serve.token)
        transport = RecordingTransport(inner)
        handler = RecordingClient()
        conn = ClientSideConnection(handler, transport)
        init = await asyncio.wait_for(conn.initialize(), TIMEOUT)
        assert init.agent_info is not None and init.agent_info.name == "engine-test-agent"
        (agent_pid,) = children(serve.proc.pid)
        sid = (await asyncio.wait_for(conn.agent.new_session("/tmp"), TIMEOUT)).session_id
        result = await asyncio.wait_for(
            conn.agent.prompt(sid, [s.TextContent(text="stream 5")]), TIMEOUT
        )
        assert result.stop_reason == "end_turn"
        assert handler.texts() == [f"chunk {i}" for i in range(5)]
        result = await asyncio.wait_for(
            conn.agent.prompt(sid, [s.TextContent(text="ask")]), TIMEOUT
        )
        assert handler.texts()[-1] == "yes"
        await conn.close()
        await wait_gone(agent_pid)
        assert serve.proc.returncode is None  # the server keeps serving
        log = transport.log
        schema_validator.validate_conversation(log.sent, log.received)
        schema_validator.validate_conversation(log.received, log.sent)


async def initialize_over(transport: Transport) -> None:
    conn = ClientSideConnection(RecordingClient(), transport)
    await asyncio.wait_for(conn.initialize(), TIMEOUT)
    await conn.close()


async def test_a_generated_token_is_printed_with_the_address_and_required() -> None:
    async with acp_serve("--", sys.executable, str(PROGRAM), env={"ACP_SERVE_TOKEN": ""}) as serve:
        assert serve.token is not None and len(serve.token) >= 32
        with pytest.raises(ConnectionClosedError, match="401"):
            await connect_websocket(serve.ws_url)
        await initialize_over(await connect_websocket(serve.ws_url, token=serve.token))


async def test_the_token_can_come_from_the_environment() -> None:
    token = "from-the-environment-0123456789"
    async with acp_serve(
        "--", sys.executable, str(PROGRAM), env={"ACP_SERVE_TOKEN": token}
    ) as serve:
        assert serve.token is None  # not printed: the user chose it
        assert token not in "\n".join(serve.lines)
        await initialize_over(await connect_http(serve.url, token=token))


async def test_no_auth_must_be_asked_for_and_says_so_loudly() -> None:
    async with acp_serve("--no-auth", "--", sys.executable, str(PROGRAM)) as serve:
        warning = await asyncio.wait_for(serve.wait_for_line("authentication is OFF"), TIMEOUT)
        assert "WARNING" in warning.string
        await initialize_over(await connect_websocket(serve.ws_url))


async def serve_exits(*args: str) -> tuple[int | None, str]:
    """``acp serve ARGS...`` expected to stop before listening: its status and stderr."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acpwire.cli.main",
        "serve",
        "--port",
        "0",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    return proc.returncode, err.decode()


async def test_no_auth_beyond_loopback_is_refused_unless_confirmed() -> None:
    status, err = await serve_exits("--host", "0.0.0.0", "--no-auth", "--demo")
    assert status == 2
    assert "--no-auth-on-network" in err and "listening" not in err
    status, err = await serve_exits("--no-auth-on-network", "--demo")
    assert status == 2 and "only confirms --no-auth" in err
    async with acp_serve(
        "--host", "0.0.0.0", "--no-auth", "--no-auth-on-network", "--", sys.executable, str(PROGRAM)
    ) as serve:
        warning = await asyncio.wait_for(serve.wait_for_line("authentication is OFF"), TIMEOUT)
        assert "WARNING" in warning.string
        await initialize_over(await connect_http(serve.url.replace("0.0.0.0", "127.0.0.1")))


@pytest.mark.parametrize("also", [[], ["--token", "given-on-the-command-line-0123"]])
async def test_the_servers_token_does_not_reach_the_agents(also: list[str]) -> None:
    """ACP_SERVE_TOKEN is the server's secret: neither the agent nor what it runs sees it;
    the rest of the server's environment is the agent's (docs/security.md)."""
    secret = "env-secret-token-0123456789abcdef"
    async with acp_serve(
        *also,
        "--",
        sys.executable,
        str(ENV_AGENT),
        env={"ACP_SERVE_TOKEN": secret, "AGENT_SETTING": "kept"},
    ) as serve:
        token = also[1] if also else secret
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            answer = await http.post(
                serve.url,
                content=b'{"jsonrpc":"2.0","id":0,"method":"initialize",'
                b'"params":{"protocolVersion":1}}',
                headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
            )
        assert answer.status_code == 200
        meta = answer.json()["result"]["_meta"]
        for environment in (meta["environment"], meta["child"]):
            assert "ACP_SERVE_TOKEN" not in environment
            assert secret not in str(environment)
            assert environment["AGENT_SETTING"] == "kept"


async def test_listening_beyond_loopback_without_tls_warns_of_clear_text() -> None:
    async with acp_serve("--host", "0.0.0.0", "--", sys.executable, str(PROGRAM)) as serve:
        line = await asyncio.wait_for(serve.wait_for_line("without TLS"), TIMEOUT)
        assert "clear text" in line.string


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made here (no network, no fixtures on disk)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "acpwire test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = folder / "cert.pem", folder / "key.pem"
    certfile.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return certfile, keyfile


async def test_tls_serves_https_and_wss(tmp_path: Path) -> None:
    certfile, keyfile = self_signed(tmp_path)
    trusted = ssl.create_default_context(cafile=str(certfile))
    async with acp_serve(
        "--certfile", str(certfile), "--keyfile", str(keyfile), "--", sys.executable, str(PROGRAM)
    ) as serve:
        assert serve.url.startswith("https://") and serve.ws_url.startswith("wss://")
        await initialize_over(await connect_websocket(serve.ws_url, token=serve.token, ssl=trusted))
        await initialize_over(await connect_http(serve.url, token=serve.token, verify=trusted))
        # HTTP/2 by ALPN on the same port, with acpwire's client and with httpx's own.
        await initialize_over(
            await connect_http(serve.url, token=serve.token, verify=trusted, http2=True)
        )
        async with httpx.AsyncClient(http2=True, verify=trusted, timeout=TIMEOUT) as http:
            assert (await http.post(serve.url, content=b"{}")).http_version == "HTTP/2"
        # A client that does not trust the certificate does not talk to it.
        with pytest.raises(ConnectionClosedError, match="CERTIFICATE_VERIFY_FAILED"):
            await connect_websocket(serve.ws_url, token=serve.token)
        plain = serve.url.replace("https://", "http://")
        async with httpx.AsyncClient(timeout=TIMEOUT) as http:
            with pytest.raises(httpx.HTTPError):
                await http.post(plain, content=b"{}")


async def test_a_worker_cookie_is_set_and_comes_back() -> None:
    async with acp_serve(
        "--worker-cookie", "acp_worker=blue", "--", sys.executable, str(PROGRAM)
    ) as serve:
        transport = await connect_websocket(serve.ws_url, token=serve.token)
        assert transport.cookies.get("acp_worker") == "blue"
        await initialize_over(transport)
        http = await connect_http(serve.url, token=serve.token)
        await initialize_over(http)
        assert http.cookies.get("acp_worker") == "blue"


async def test_a_bad_worker_cookie_is_a_usage_error() -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acpwire.cli.main",
        "serve",
        "--worker-cookie",
        "a b",
        "--demo",
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    assert proc.returncode == 2 and b"NAME=VALUE" in err


async def test_the_demo_keeps_its_sessions_in_the_store_the_url_names(tmp_path: Path) -> None:
    from acpwire.client import AllowAll, ToolkitClient, open_agent
    from acpwire.store import open_store

    url = f"sqlite:///{tmp_path / 'served.sqlite3'}"
    async with acp_serve("--demo", "--store", url) as serve:
        client = ToolkitClient(permissions=AllowAll())
        async with open_agent(url=serve.ws_url, token=serve.token, client=client):
            state = await client.new_session(str(tmp_path))
            result = await client.prompt(state.session_id, "help")
            assert result.stop_reason == "end_turn"
    store = open_store(url)
    try:
        records, _ = await store.list_sessions()
        assert [r.session_id for r in records] == [state.session_id]
        assert await store.history(state.session_id)  # the turn was committed
    finally:
        await store.aclose()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--demo", "--store", "redis://nowhere"], "unknown store URL scheme"),
        (["--store", "memory:", "--", "some-agent"], "--store is for --demo"),
    ],
)
async def test_a_store_the_server_cannot_use_is_a_usage_error(args: list[str], says: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "acpwire.cli.main",
        "serve",
        "--port",
        "0",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    assert proc.returncode == 2
    assert says in err.decode()
