"""An ACP agent in front of an OpenAI-compatible chat completions API.

Every prompt is sent, with the session's conversation so far, to
``POST {OPENAI_BASE_URL}/chat/completions`` with ``stream: true``; each
Server-Sent Events delta (``choices[0].delta.content``) is streamed to the
client as an ``agent_message_chunk`` (``delta.reasoning_content`` /
``delta.reasoning``, which some compatible servers send, as thought chunks).
When the API reports ``usage`` the agent sends a ``usage_update``.

Configuration (environment):

* ``OPENAI_BASE_URL``: default ``https://api.openai.com/v1`` (``http://`` works too,
  e.g. a local llama.cpp / vLLM / Ollama server)
* ``OPENAI_API_KEY``: sent as ``Authorization: Bearer ...`` when set
* ``OPENAI_MODEL``: the default model (``gpt-4o-mini`` when unset); the session's
  ``model`` config option (category ``model``) offers it plus ``OPENAI_MODELS``
  (comma separated), so a client can switch models per session
* ``OPENAI_SYSTEM_PROMPT``: an optional system message
* ``OPENAI_CONTEXT_WINDOW``: the context size reported in ``usage_update`` (default 128000)
* ``OPENAI_TIMEOUT``: seconds to wait for a connection or for the next bytes (default 120)
* ``OPENAI_STREAM_USAGE=0``: do not ask for ``stream_options.include_usage`` (for
  servers that reject it)

The conversation is kept in ``turn.session.state["messages"]``, which the
toolkit saves with the session: run with ``--store PATH`` (a SQLite file) and
sessions survive restarts; ``session/load`` replays them and the next prompt
carries the whole history again.

HTTP errors (401, 429, 500, ...) and network failures end the turn with a
message saying what went wrong and the stop reason ``refusal`` (the turn could
not be done; the failed prompt is not added to the history, so it can simply
be retried). ``session/cancel`` closes the HTTP connection at once and the
prompt answers ``cancelled``; what was streamed so far is kept in the history.

Only the standard library is used for HTTP: HTTP/1.1 over asyncio streams
(TLS through ``ssl`` for ``https://``), with chunked transfer decoding. Each read
is bounded with acpwire's ``within()``, not ``asyncio.wait_for``: on Python 3.10
and 3.11 ``wait_for`` returns the read's result and drops the cancellation when a
chunk arrives in the same turn of the event loop as ``session/cancel``, and the
turn then ran on to the end of the stream.

Run: ``OPENAI_API_KEY=sk-... python examples/openai_agent.py [--store PATH]`` (stdio).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from acpwire._waits import within
from acpwire.agent.app import AgentApp, Choice, Select, StopReason, Turn

BASE_URL = os.environ.get("OPENAI_BASE_URL", "").strip() or "https://api.openai.com/v1"
API_KEY = os.environ.get("OPENAI_API_KEY", "").strip()
MODEL = os.environ.get("OPENAI_MODEL", "").strip() or "gpt-4o-mini"
MODELS = [MODEL] + [
    m.strip()
    for m in os.environ.get("OPENAI_MODELS", "").split(",")
    if m.strip() and m.strip() != MODEL
]
SYSTEM_PROMPT = os.environ.get("OPENAI_SYSTEM_PROMPT", "").strip()
CONTEXT_WINDOW = int(os.environ.get("OPENAI_CONTEXT_WINDOW", "128000"))
TIMEOUT = float(os.environ.get("OPENAI_TIMEOUT", "120"))
STREAM_USAGE = os.environ.get("OPENAI_STREAM_USAGE", "1").strip().lower() not in (
    "0",
    "false",
    "no",
)
MAX_ERROR_BODY = 64 * 1024

FINISH_REASONS: dict[str, StopReason] = {
    "length": "max_tokens",
    "content_filter": "refusal",
}


# ---------------------------------------------------------------------- HTTP (stdlib only)


class ApiError(Exception):
    """The API could not be used; ``str()`` is the message shown to the user."""


@dataclass
class Response:
    status: int
    reason: str
    headers: dict[str, str]
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    def close(self) -> None:
        """Drop the connection at once (also what cancellation does)."""
        transport = self.writer.transport
        if not transport.is_closing():
            transport.abort()

    async def _read(self, coro: Any) -> Any:
        try:
            return await within(coro, TIMEOUT)
        except asyncio.TimeoutError:
            raise ApiError(f"the API sent nothing for {TIMEOUT:g} s") from None

    async def body(self) -> AsyncIterator[bytes]:
        """The body's bytes: chunked, with a Content-Length, or up to the end of the connection."""
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            while True:
                size_line = await self._read(self.reader.readline())
                if not size_line:
                    raise ApiError("the API closed the connection in the middle of a response")
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    return
                yield await self._read(self.reader.readexactly(size))
                await self._read(self.reader.readline())  # CRLF after each chunk
        length = self.headers.get("content-length")
        if length is not None:
            remaining = int(length)
            while remaining > 0:
                data = await self._read(self.reader.read(min(remaining, 65536)))
                if not data:
                    raise ApiError("the API closed the connection in the middle of a response")
                remaining -= len(data)
                yield data
            return
        while data := await self._read(self.reader.read(65536)):
            yield data

    async def lines(self) -> AsyncIterator[str]:
        """The body split into text lines (without their line ends)."""
        pending = b""
        async for data in self.body():
            pending += data
            *complete, pending = pending.split(b"\n")
            for line in complete:
                yield line.rstrip(b"\r").decode("utf-8", "replace")
        if pending:
            yield pending.rstrip(b"\r").decode("utf-8", "replace")

    async def text(self, limit: int = MAX_ERROR_BODY) -> str:
        data = b""
        async for chunk in self.body():
            data += chunk
            if len(data) >= limit:
                break
        return data[:limit].decode("utf-8", "replace")


async def post(url: str, payload: dict[str, Any], headers: dict[str, str]) -> Response:
    """``POST url`` with a JSON body over HTTP/1.1; returns once the status and headers are in."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ApiError(f"OPENAI_BASE_URL must be an http:// or https:// URL, not {url!r}")
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    try:
        reader, writer = await within(
            asyncio.open_connection(
                parts.hostname,
                port,
                ssl=ssl.create_default_context() if secure else None,
                server_hostname=parts.hostname if secure else None,
                limit=1024 * 1024,
            ),
            TIMEOUT,
        )
    except asyncio.TimeoutError:
        raise ApiError(f"could not connect to {parts.netloc} within {TIMEOUT:g} s") from None
    except (OSError, ssl.SSLError) as error:
        raise ApiError(f"could not connect to {parts.netloc}: {error}") from None
    body = json.dumps(payload).encode("utf-8")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    head = {
        "Host": host,
        "User-Agent": "acpwire-openai-agent/0.1",
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
        "Content-Length": str(len(body)),
        "Connection": "close",
        **headers,
    }
    request = f"POST {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items())
    response: Response | None = None
    try:
        writer.write(request.encode("latin-1") + b"\r\n" + body)
        await writer.drain()
        status_line = await within(reader.readline(), TIMEOUT)
        fields = status_line.decode("latin-1").split(" ", 2)
        if len(fields) < 2 or not fields[0].startswith("HTTP/") or not fields[1].isdigit():
            raise ApiError(f"{parts.netloc} did not answer with HTTP ({status_line[:80]!r})")
        response_headers: dict[str, str] = {}
        while True:
            line = await within(reader.readline(), TIMEOUT)
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            response_headers[name.strip().lower()] = value.strip()
        response = Response(
            int(fields[1]),
            fields[2].strip() if len(fields) > 2 else "",
            response_headers,
            reader,
            writer,
        )
        return response
    except asyncio.TimeoutError:
        raise ApiError(f"{parts.netloc} did not answer within {TIMEOUT:g} s") from None
    except (OSError, ssl.SSLError) as error:
        raise ApiError(f"the connection to {parts.netloc} failed: {error}") from None
    finally:
        if response is None:  # failed or cancelled before a response: drop the connection
            writer.transport.abort()


# ---------------------------------------------------------------------- the API


HINTS = {
    401: "check OPENAI_API_KEY",
    403: "the API key may not have access to this model",
    404: "check OPENAI_BASE_URL and the model name",
    429: "rate limited or out of quota; try again later",
}


async def describe_failure(response: Response) -> str:
    """A clear message for a non-2xx answer: status, the API's own message, a hint."""
    try:
        text = await response.text()
    except (ApiError, OSError, ValueError):
        text = ""
    detail = text.strip()
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        error = json.loads(text).get("error")
        detail = error.get("message", detail) if isinstance(error, dict) else str(error or detail)
    hint = HINTS.get(response.status) or (
        "the server had a problem; try again" if response.status >= 500 else ""
    )
    message = f"The model API answered HTTP {response.status}"
    message += f" {response.reason}" if response.reason else ""
    message += f": {detail[:500]}" if detail else ""
    return message + (f" ({hint})." if hint else ".")


@dataclass
class Events:
    """What a stream produced: the text, the finish reason and the last ``usage`` seen."""

    text: str = ""
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


async def stream_completion(turn: Turn, messages: list[dict[str, Any]], events: Events) -> None:
    """Send the request and stream its deltas to the client, filling ``events``."""
    headers = {"Authorization": f"Bearer {API_KEY}"} if API_KEY else {}
    payload: dict[str, Any] = {
        "model": turn.config.get("model", MODEL),
        "messages": messages,
        "stream": True,
    }
    if STREAM_USAGE:
        payload["stream_options"] = {"include_usage": True}
    response = await post(BASE_URL.rstrip("/") + "/chat/completions", payload, headers)
    try:
        if not 200 <= response.status < 300:
            raise ApiError(await describe_failure(response))
        data_lines: list[str] = []
        async for line in response.lines():
            if line.startswith("data:"):
                data_lines.append(line[5:].removeprefix(" "))
                continue
            if line or not data_lines:
                continue  # comments (": keep-alive"), event:/id: fields, extra blank lines
            data, data_lines = "\n".join(data_lines), []
            if data.strip() == "[DONE]":
                return
            await handle_event(turn, data, events)
        if data_lines and "\n".join(data_lines).strip() != "[DONE]":
            await handle_event(turn, "\n".join(data_lines), events)
    except (OSError, EOFError) as error:  # reset, or closed inside a chunk
        raise ApiError(f"the connection to the model API failed: {error or 'closed'}") from None
    except ValueError as error:  # a bad chunk size, an over-long line
        raise ApiError(f"the model API sent a malformed response: {error}") from None
    finally:
        response.close()  # on cancellation too: the server sees the connection go away


async def handle_event(turn: Turn, data: str, events: Events) -> None:
    try:
        chunk = json.loads(data)
    except ValueError:
        return  # not JSON: ignore, as OpenAI's own clients do
    if not isinstance(chunk, dict):
        return
    if isinstance(chunk.get("error"), dict):
        raise ApiError(f"The model API reported an error: {chunk['error'].get('message', chunk)}")
    if isinstance(chunk.get("usage"), dict):
        events.usage = chunk["usage"]
    choices = chunk.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return
    choice = choices[0]
    delta = choice.get("delta") or {}
    thought = delta.get("reasoning_content") or delta.get("reasoning")
    if isinstance(thought, str) and thought:
        await turn.think(thought)
    content = delta.get("content")
    if isinstance(content, str) and content:
        events.text += content
        await turn.say(content)
    if choice.get("finish_reason"):
        events.finish_reason = choice["finish_reason"]


# ---------------------------------------------------------------------- the agent


def store_from_argv(argv: list[str]) -> str | None:
    if "--store" in argv:
        index = argv.index("--store")
        if index + 1 >= len(argv):
            raise SystemExit("usage: openai_agent.py [--store PATH]")
        return argv[index + 1]
    return None


app = AgentApp(
    "openai-agent",
    title="OpenAI-compatible agent",
    store=store_from_argv(sys.argv[1:]) if __name__ == "__main__" else None,
    options=[Select("model", "Model", [Choice(m, m) for m in MODELS], category="model")],
    embedded_context=True,
)


@app.prompt
async def chat(turn: Turn) -> StopReason:
    history: list[dict[str, Any]] = list(turn.session.state.get("messages") or [])
    user = {"role": "user", "content": turn.text}
    system = [{"role": "system", "content": SYSTEM_PROMPT}] if SYSTEM_PROMPT else []
    events = Events()
    try:
        await stream_completion(turn, [*system, *history, user], events)
    except ApiError as error:
        await turn.say(f"{error}\n" if events.text == "" else f"\n\n{error}\n")
        return "refusal"
    except asyncio.CancelledError:
        # Keep what the user saw; the toolkit saves the state after the turn.
        turn.session.state["messages"] = [
            *history,
            user,
            *([{"role": "assistant", "content": events.text}] if events.text else []),
        ]
        raise
    turn.session.state["messages"] = [
        *history,
        user,
        {"role": "assistant", "content": events.text},
    ]
    if events.usage is not None:
        used = events.usage.get("total_tokens")
        if not isinstance(used, int):
            used = int(events.usage.get("prompt_tokens") or 0) + int(
                events.usage.get("completion_tokens") or 0
            )
        await turn.report_usage(used, CONTEXT_WINDOW)
    return FINISH_REASONS.get(events.finish_reason or "", "end_turn")


if __name__ == "__main__":
    app.run([])
