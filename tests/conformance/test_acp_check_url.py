"""``acp check --url`` against acpwire's own endpoint, and the command's options and exits.

``acp serve --demo`` in a real subprocess, checked by ``acp check --url`` in another: every
MUST check passes but the two main's server cannot meet yet (it routes session messages
to per-session streams, the RFD's earlier model; uvicorn speaks HTTP/1.1 only), and the
agent checks through the endpoint find what they find over stdio. The ASGI app served in
this process shows the keepalive and HTTP/2 checks both ways.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from server._serve import acp_serve
from server.test_serve_command import self_signed
from waiting import TIMEOUT

from acpwire.conformance import CheckOptions, EndpointTarget, Report, run_checks
from acpwire.demo import build_app
from acpwire.server import asgi_app, serve_in_background
from acpwire.server.asgi import AcpAsgiApp
from acpwire.server.runner import Tls, bind, tls_options

ACP = [sys.executable, "-m", "acpwire.cli.main"]
TEST_OPTIONS: dict[str, Any] = {"timeout": 10.0, "quick_timeout": 5.0, "grace": 3.0}
TOKEN = "alice-0123456789abcdef0123"
TOKEN2 = "bob-0123456789abcdef012345"
FAST = ("--timeout", "10", "--quick-timeout", "5", "--grace", "3")
"""Timeouts a loaded machine meets; nothing here waits for them but a failing check."""
RUN_BOUND = 4 * TIMEOUT
"""Bound of one whole ``acp check --url`` run against ``acp serve``: many waits, each a
fraction of TIMEOUT."""


def fast(target: EndpointTarget, only: str) -> CheckOptions:
    keys = frozenset(only.split(","))
    return CheckOptions(endpoint=target, only=keys, **TEST_OPTIONS)


def results(report: Report) -> dict[str, str]:
    return {r.check.key: r.status for r in report.results}


def detail(report: Report, key: str) -> str:
    return next(r.detail for r in report.results if r.check.key == key)


async def check_serve_demo(tmp_path: Path, *check_args: str) -> dict[str, Any]:
    """``acp check --url --json ARGS...`` against ``acp serve --demo`` (tokens TOKEN and
    TOKEN2): the report; nothing on stderr."""
    serve_env = {"ACPWIRE_DATA_DIR": str(tmp_path)}
    async with acp_serve("--demo", "--token", TOKEN, "--token", TOKEN2, env=serve_env) as serve:
        check = await asyncio.create_subprocess_exec(
            *ACP,
            "check",
            "--url",
            serve.url,
            "--json",
            *FAST,
            *check_args,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "ACP_TOKEN": TOKEN},
        )
        out, err = await asyncio.wait_for(check.communicate(), RUN_BOUND)
    assert err == b"", err.decode(errors="replace")
    report: dict[str, Any] = json.loads(out)
    assert report["exitCode"] == check.returncode
    return report


async def test_a_request_cancelled_at_once_through_acp_serve_is_answered_once(
    tmp_path: Path,
) -> None:
    # RCANCEL-001 on its own, quick: session/new and its $/cancel_request in one burst
    # reach the agent's engine straight from the socket; the answer was once written and
    # then a -32800 added while the write waited.
    report = await check_serve_demo(tmp_path, "--only", "cancel-request")
    (result,) = [r for r in report["results"] if r["check"] == "cancel-request"]
    assert result["status"] == "pass", result


async def test_acp_serve_demo_fails_no_check(tmp_path: Path) -> None:
    report = await check_serve_demo(
        tmp_path, "--token2", TOKEN2, "--keepalive-wait", "0", "--slow-prompt", "slow 30"
    )
    # The failed results whole, so that a failure says what the check saw.
    assert [r for r in report["results"] if r["status"] == "fail"] == []
    assert report["exitCode"] == 0
    statuses = {r["check"]: r["status"] for r in report["results"]}
    for key in (
        "principal-sessions",
        "principal-connections",
        "reattach",
        "cancel",
        "schema",
        "mcp-connect",  # the demo connects a session's MCP servers when it opens
    ):
        assert statuses[key] == "pass", key
    skipped = {r["check"] for r in report["results"] if r["status"] == "skip"}
    assert skipped == {
        "shutdown",
        "shutdown-turn",
        "stdout-clean",
        "stream-keepalive",
        "tool-progress",
    }


@contextlib.asynccontextmanager
async def demo_endpoint(tmp_path: Path, keepalive: float = 15.0) -> AsyncIterator[AcpAsgiApp]:
    """acpwire's endpoint hosting the demo agent; its store is closed afterwards."""
    agent = build_app(tmp_path / "demo.sqlite3")
    try:
        yield asgi_app(agent, auth=[TOKEN], keepalive=keepalive)
    finally:
        await agent.aclose()


@contextlib.asynccontextmanager
async def served_demo(tmp_path: Path, tls: Tls | None = None) -> AsyncIterator[str]:
    """acpwire's endpoint with the demo agent, served in this event loop."""
    async with demo_endpoint(tmp_path, keepalive=0.3) as app:
        async with serve_in_background(app, tls=tls) as served:
            yield served.url


@contextlib.asynccontextmanager
async def under_uvicorn(app: AcpAsgiApp, tls: dict[str, str] | None = None) -> AsyncIterator[str]:
    """``app`` served by uvicorn: an endpoint that speaks HTTP/1.1 only (no ALPN either)."""
    uvicorn = pytest.importorskip("uvicorn")
    sock = bind()
    config = uvicorn.Config(app, log_level="critical", lifespan="off", **(tls or {}))
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    scheme = "https" if tls else "http"
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("uvicorn stopped while starting")
            await asyncio.sleep(0.01)
        yield f"{scheme}://127.0.0.1:{sock.getsockname()[1]}{app.path}"
    finally:
        await app.aclose()
        server.should_exit = True
        await asyncio.wait_for(task, TIMEOUT)
        sock.close()


async def test_the_keepalive_and_http2_checks_pass_on_acpwire_endpoint(tmp_path: Path) -> None:
    async with served_demo(tmp_path) as url:
        target = EndpointTarget(url, token=TOKEN, keepalive_wait=1.5)
        report = await run_checks(fast(target, "stream-keepalive,http2"))
    assert results(report) == {"stream-keepalive": "pass", "http2": "pass"}


async def test_the_http2_check_fails_on_an_http1_only_server(tmp_path: Path) -> None:
    async with demo_endpoint(tmp_path) as app, under_uvicorn(app) as url:
        report = await run_checks(fast(EndpointTarget(url, token=TOKEN), "http2,http-initialize"))
    assert results(report) == {"http-initialize": "pass", "http2": "fail"}
    assert "HTTP/1" in detail(report, "http2")


async def test_over_tls_the_http2_check_fails_when_alpn_does_not_choose_h2(
    tmp_path: Path,
) -> None:
    certfile, keyfile = self_signed(tmp_path)
    tls = {"ssl_certfile": str(certfile), "ssl_keyfile": str(keyfile)}
    async with demo_endpoint(tmp_path) as app, under_uvicorn(app, tls) as url:
        target = EndpointTarget(url, token=TOKEN, cafile=str(certfile))
        report = await run_checks(fast(target, "http2,http-initialize,ws-upgrade"))
    assert results(report) == {"http-initialize": "pass", "http2": "fail", "ws-upgrade": "pass"}
    assert "chose neither" in detail(report, "http2")


@pytest.mark.parametrize("secure", [False, True], ids=["h2c", "tls-alpn"])
async def test_the_http2_check_passes_when_the_server_speaks_http2(
    tmp_path: Path, secure: bool
) -> None:
    certfile, keyfile = self_signed(tmp_path)
    tls = tls_options(str(certfile), str(keyfile)) if secure else None
    async with served_demo(tmp_path, tls) as url:
        target = EndpointTarget(url, token=TOKEN, cafile=str(certfile) if secure else None)
        report = await run_checks(fast(target, "http2,http-initialize"))
    assert results(report) == {"http-initialize": "pass", "http2": "pass"}
    assert detail(report, "http2") == "initialize answered over HTTP/2"


async def test_an_endpoint_that_refuses_the_checker_blocks_the_run_with_exit_3(
    tmp_path: Path,
) -> None:
    async with served_demo(tmp_path) as url:
        report = await run_checks(
            CheckOptions(
                endpoint=EndpointTarget(url, token="not-the-token"),
                **TEST_OPTIONS,
            )
        )
    assert report.exit_code == 3, report.to_json()
    assert report.blocked is not None and "HTTP 401" in report.blocked
    statuses = results(report)
    assert statuses["auth-required"] == "pass"
    assert statuses["initialize"] == "skip" and statuses["http-routing"] == "skip"
    assert "401" in detail(report, "initialize")


async def test_the_agent_checks_run_over_streamable_http_too(tmp_path: Path) -> None:
    async with served_demo(tmp_path) as url:
        target = EndpointTarget(url, token=TOKEN, via="http")
        only = "initialize,session-new,prompt,cancel,malformed-line,schema,responses"
        report = await run_checks(
            CheckOptions(
                endpoint=target,
                only=frozenset(only.split(",")),
                slow_prompt="slow 30",
                **TEST_OPTIONS,
            )
        )
    statuses = results(report)
    assert statuses.pop("malformed-line") == "skip"
    assert set(statuses.values()) == {"pass"}, report.to_json()


def acp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ACP, *args],
        capture_output=True,
        text=True,
        timeout=RUN_BOUND,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "ACP_TOKEN": ""},
    )


def test_cli_usage_errors_of_url_exit_2(tmp_path: Path) -> None:
    both = acp("check", "--url", "http://127.0.0.1:9/acp", "--", "some-agent")
    assert both.returncode == 2 and "not both" in both.stderr
    scheme = acp("check", "--url", "ftp://127.0.0.1/acp")
    assert scheme.returncode == 2 and "not an http(s) URL" in scheme.stderr
    header = acp("check", "--url", "http://127.0.0.1:9/acp", "--header", "no colon")
    assert header.returncode == 2 and "NAME:VALUE" in header.stderr
    cafile = acp("check", "--url", "https://127.0.0.1:9/acp", "--cafile", str(tmp_path / "x"))
    assert cafile.returncode == 2 and "--cafile" in cafile.stderr


def test_header_values_and_credentials_are_kept_apart() -> None:
    target = EndpointTarget(
        "https://acp.example/acp",
        token="t1",
        headers={"X-Tenant": "a", "Cookie": "s=1", "Authorization": "Bearer old"},
        origin="https://app.example",
    )
    assert target.request_headers() == {
        "X-Tenant": "a",
        "Cookie": "s=1",
        "Origin": "https://app.example",
        "Authorization": "Bearer t1",
    }
    assert target.request_headers(credentials=False) == {
        "X-Tenant": "a",
        "Origin": "https://app.example",
    }
    assert target.request_headers(token="t2")["Authorization"] == "Bearer t2"
    assert not target.loopback and target.ws_url == "wss://acp.example/acp"
    bare = EndpointTarget("http://[::1]:8000/acp", headers={"authorization": "Bearer h"})
    assert bare.loopback and bare.bearer == "h" and bare.host_header == "[::1]:8000"


def test_connection_ids_are_judged_by_length_and_alphabet() -> None:
    from acpwire.conformance.endpoints.security import id_bits

    assert id_bits("1") < 4
    assert id_bits("550e8400-e29b-41d4-a716-446655440000") == 128  # a UUID's 32 hex digits
    assert id_bits("Ab-_" * 8) == 192  # 32 characters of base64url, as token_urlsafe(24)
    assert id_bits("0123456789") < 34
