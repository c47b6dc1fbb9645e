"""A pytest plugin: ACP conversations recorded on the first run and replayed afterwards
(VCR style; docs/recorder.md, "pytest").

Installed with acpwire (entry point ``pytest11``), it gives every test an
``acp_cassette`` fixture, an ``acp_cassette`` marker and the ``--acp-record`` option:

* ``async with acp_cassette.agent(COMMAND) as transport`` — for tests of a client: the
  first run (no cassette yet, or ``--acp-record``) starts the real agent and records the
  conversation; later runs serve the recording instead (no agent process, no model, no
  network). Leaving the block fails the test if the client did something the
  recording does not have, or answered the agent differently.
* ``await acp_cassette.verify(transport)`` — for tests of an agent: the recorded client
  side (a cassette made by ``acp record`` in front of a real editor, or by a client test)
  drives the agent behind ``transport``; the test fails listing every difference.

The cassette is ``cassettes/<test name>.jsonl`` beside the test file, or the path given
to the marker (relative to the test file): ``@pytest.mark.acp_cassette("chat.jsonl")``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from .._waits import within
from ..transports.base import Transport
from .redaction import RedactionSettings

__all__ = ["AcpCassette"]

REPLAY_CLOSE = 10.0
"""Seconds the replayed agent may take to finish once the test's client is done."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acpwire")
    group.addoption(
        "--acp-record",
        action="store_true",
        default=False,
        help="record ACP cassettes again (acp_cassette.agent starts the real agents)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "acp_cassette(path, redaction=None): the ACP cassette of this test, relative to "
        "the test file (default cassettes/<test name>.jsonl)",
    )


def _default_name(node: pytest.Item) -> str:
    return re.sub(r"[^\w.-]+", "_", node.name).strip("_") + ".jsonl"


class AcpCassette:
    """The ``acp_cassette`` fixture's value (see the module docstring)."""

    def __init__(
        self, path: Path, *, record: bool, redaction: RedactionSettings | None = None
    ) -> None:
        self.path = path
        self.record_again = record
        self.redaction = redaction

    @property
    def recording(self) -> bool:
        """Whether :meth:`agent` records (no cassette yet, or ``--acp-record``)."""
        return self.record_again or not self.path.exists()

    @contextlib.asynccontextmanager
    async def agent(
        self,
        command: Sequence[str] | Callable[[], Awaitable[Transport]],
        **spawn_options: Any,
    ) -> AsyncIterator[Transport]:
        """A transport to the agent: the real one recorded, or the recording replayed.

        ``command`` is an agent command line (started with
        :func:`~acpwire.transports.spawn`, which gets ``spawn_options``) or a function
        returning a transport to the agent (an in-process app over a memory pair).
        """
        if self.recording:
            async with self._recorded(command, spawn_options) as transport:
                yield transport
            return
        async with self._replayed() as transport:
            yield transport

    @contextlib.asynccontextmanager
    async def _recorded(
        self,
        command: Sequence[str] | Callable[[], Awaitable[Transport]],
        spawn_options: dict[str, Any],
    ) -> AsyncIterator[Transport]:
        from ..transports import spawn
        from .recording import record_to

        self.path.parent.mkdir(parents=True, exist_ok=True)
        if callable(command):
            inner = await command()
            argv: list[str] | None = None
        else:
            argv = list(command)
            inner = await spawn(argv[0], argv[1:], **spawn_options)
        transport = record_to(inner, self.path, redaction=self.redaction, command=argv)
        try:
            yield transport
        finally:
            await transport.close()

    @contextlib.asynccontextmanager
    async def _replayed(self) -> AsyncIterator[Transport]:
        from ..transports.memory import memory_pair
        from .cassette import read_cassette
        from .conversation import Conversation
        from .replay_agent import ReplayAgent

        replay = ReplayAgent(Conversation.from_cassette(read_cassette(self.path)))
        agent_end, client_end = memory_pair()
        serving = asyncio.ensure_future(replay.serve(agent_end))
        try:
            yield client_end
        finally:
            await client_end.close()
            try:
                report = await within(asyncio.shield(serving), REPLAY_CLOSE)
            except asyncio.TimeoutError:
                serving.cancel()
                raise
        problems = [*report.unmatched, *report.mismatches]
        if problems:
            raise AssertionError(
                f"the client departed from the recording {self.path}:\n  "
                + "\n  ".join(problems)
                + "\n(run with --acp-record to record it again)"
            )

    async def verify(self, transport: Transport, *, cwd: str | None = None) -> None:
        """Drive the agent behind ``transport`` with the recorded client side; fail the
        test listing every difference from the recording (skip it if there is none)."""
        from .cassette import read_cassette
        from .conversation import Conversation
        from .replay_client import ReplayClient
        from .verify import compare, format_differences

        if not self.path.exists():
            pytest.skip(
                f"no cassette {self.path}: record one with "
                f"`acp record -o {self.path} -- AGENT` in front of a real client"
            )
        conversation = Conversation.from_cassette(read_cassette(self.path))
        run = await ReplayClient(conversation, cwd=cwd).run(transport)
        found = compare(conversation, run)
        if found or run.report.unmatched:
            text = format_differences(found)
            extra = "".join(f"\nalso: {note}" for note in run.report.unmatched)
            raise AssertionError(f"the agent departed from {self.path}:\n{text}{extra}")


@pytest.fixture
def acp_cassette(request: pytest.FixtureRequest) -> AcpCassette:
    """Record an ACP conversation on the first run, replay it afterwards (see the module)."""
    node = request.node
    marker = node.get_closest_marker("acp_cassette")
    here = Path(str(node.path)).parent
    name = marker.args[0] if marker is not None and marker.args else None
    path = here / name if name else here / "cassettes" / _default_name(node)
    redaction = marker.kwargs.get("redaction") if marker is not None else None
    record = bool(request.config.getoption("--acp-record"))
    return AcpCassette(path, record=record, redaction=redaction)
