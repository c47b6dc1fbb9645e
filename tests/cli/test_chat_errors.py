"""``acp chat`` and ``acp connect`` fail clearly: the commands a new user ran, each run for
real, ends with one clear line on stderr, a non-zero exit status, and no traceback.

* an agent that answers ``initialize`` with an error (or is no agent at all: ``cat``
  echoes the request back), or dies at once behind ``acp serve``: exit 3, the agent's
  error in one line; the interactive app shows an error screen instead of waiting at
  "starting the agent..." for ever;
* a refused token over Streamable HTTP is reported at once (it used to take the 60 s
  ``initialize`` timeout: each run here is bounded by :data:`TIMEOUT`, 30 s by default, so a run
  that waits for that timeout fails), and ``acp connect`` also answers the editor's
  ``initialize`` with it as a JSON-RPC error;
* a ``--url`` that is no http(s)/ws(s) URL with a host is a usage error (exit 2).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from server._serve import Serve, acp_serve
from waiting import TIMEOUT

from acpwire.cli.chat.session import EXIT_START_FAILED, EXIT_USAGE

from .pty_terminal import PtyTerminal

HOSTILE = [sys.executable, str(Path(__file__).with_name("hostile_agent.py"))]
ACP = [sys.executable, "-m", "acpwire.cli.main"]
TOKEN = "chat-errors-token-0123456789abcdef"
DIES_AT_ONCE = [
    sys.executable,
    "-c",
    "import sys; print('no API key', file=sys.stderr); sys.exit(3)",
]


async def acp(*args: str, stdin: bytes = b"") -> tuple[int, str, str]:
    """Run ``acp ARGS``; exit status, stdout and stderr."""
    proc = await asyncio.create_subprocess_exec(
        *ACP,
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "ACP_TOKEN": ""},
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin), TIMEOUT)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def one_clear_line(err: str, headline: str) -> None:
    """stderr is ``acp chat: HEADLINE...`` (and at most a line of hint), no traceback."""
    lines = err.strip().splitlines()
    assert "Traceback" not in err, err
    assert lines[0].startswith(headline), err
    assert len(lines) <= 2, err


# ---------------------------------------------------------------------- initialize fails


async def test_an_agent_that_answers_initialize_with_an_error_is_one_line(tmp_path: Path) -> None:
    code, out, err = await acp(
        "chat", "--cwd", str(tmp_path), "--prompt", "hi", "--", *HOSTILE, "init-error"
    )
    assert code == EXIT_START_FAILED
    one_clear_line(err, "acp chat: the agent (")
    assert "answered initialize with an error: cannot initialize: no model configured" in err
    assert out == ""


async def test_a_command_that_is_no_agent_is_one_line(tmp_path: Path) -> None:
    """``cat`` echoes the client's ``initialize`` back: the client refuses it, and cat
    echoes that refusal back as the answer."""
    code, _, err = await acp("chat", "--cwd", str(tmp_path), "--prompt", "hi", "--", "cat")
    assert code == EXIT_START_FAILED
    one_clear_line(err, "acp chat: the agent (cat) answered initialize with an error: ")
    assert "is it an ACP agent" in err


async def test_a_json_run_ends_with_the_error_as_its_last_line(tmp_path: Path) -> None:
    code, out, _ = await acp(
        "chat", "--cwd", str(tmp_path), "--json", "--prompt", "hi", "--", *HOSTILE, "init-error"
    )
    assert code == EXIT_START_FAILED
    assert "no model configured" in json.loads(out.splitlines()[-1])["error"]["message"]


def test_the_app_shows_an_error_screen_and_exits_3(tmp_path: Path) -> None:
    argv = [*ACP, "chat", "--cwd", str(tmp_path), "--", *HOSTILE, "init-error"]
    chat = PtyTerminal(argv, dict(os.environ))
    try:
        chat.wait_for("no model configured")
        chat.wait_for("Quit")
        chat.press("enter")  # Quit has the focus
        assert chat.exit_code() == EXIT_START_FAILED
        assert "Traceback" not in chat.text()
        # Printed again once the app has left the screen, for the terminal's scrollback.
        after_the_app = re.split(r"\x1b\[[0-9;?]*[a-zA-Z]", chat.output)[-1]
        assert after_the_app.strip().startswith("acp chat: the agent (")
    finally:
        chat.close()


# ---------------------------------------------------------------------- behind acp serve


@pytest.fixture
async def serve_dying_agent() -> AsyncIterator[Serve]:
    async with acp_serve("--token", TOKEN, "--", *DIES_AT_ONCE) as serve:
        yield serve


@pytest.mark.parametrize("http", [False, True], ids=["websocket", "http"])
async def test_an_agent_that_dies_at_once_behind_acp_serve_is_one_line(
    serve_dying_agent: Serve, http: bool
) -> None:
    url = serve_dying_agent.url
    args = ["chat", "--url", url, *(["--http"] if http else []), "--token", TOKEN]
    code, _, err = await acp(*args, "--prompt", "hi")
    assert code == EXIT_START_FAILED
    one_clear_line(err, "acp chat: ")
    assert url in err.splitlines()[0]


@pytest.mark.parametrize("http", [False, True], ids=["websocket", "http"])
async def test_a_refused_token_is_said_at_once(serve_dying_agent: Serve, http: bool) -> None:
    url = serve_dying_agent.url
    args = ["chat", "--url", url, *(["--http"] if http else []), "--token", "wrong-token"]
    code, _, err = await acp(*args, "--prompt", "hi")
    assert code == EXIT_START_FAILED
    one_clear_line(err, f"acp chat: the agent at {url} refused the token: ")
    assert "401" in err


@pytest.mark.parametrize("http", [False, True], ids=["websocket", "http"])
async def test_acp_connect_answers_the_editors_initialize_with_a_refused_token(
    serve_dying_agent: Serve, http: bool
) -> None:
    url = serve_dying_agent.url
    initialize = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "initialize",
        "params": {"protocolVersion": 1},
    }
    code, out, err = await acp(
        "connect",
        *(["--http"] if http else []),
        "--token",
        "wrong-token",
        url,
        stdin=json.dumps(initialize).encode() + b"\n",
    )
    assert code == 1
    (answer,) = [json.loads(line) for line in out.splitlines()]
    assert answer["id"] == 7 and "401" in answer["error"]["message"]
    one_clear_line(err, "acp connect: ")
    assert "401" in err


# ---------------------------------------------------------------------- bad URLs


@pytest.mark.parametrize("url", ["notaurl", "ftp://example.com/acp", "http:///acp", "ws://h:x/"])
async def test_a_url_that_is_no_agent_address_is_a_usage_error(url: str) -> None:
    code, _, err = await acp("chat", "--url", url, "--prompt", "hi")
    assert code == EXIT_USAGE
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("acp: error: --url: ")
    code, _, err = await acp("connect", url)
    assert code == EXIT_USAGE
    one_clear_line(err, "acp connect: ")
