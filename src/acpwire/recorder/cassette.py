"""The cassette: an ACP conversation as line-delimited JSON (docs/recorder.md, "Format").

One JSON object per line, each with a ``type``:

* ``header`` (the first line): format name and version, recorder version, when and how
  the recording was made (``mode``: ``stdio``, ``remote`` or ``in-process``), the command
  line or URL, the working directory, Python and platform, what redaction did, and the
  clocks the record times count from;
* ``message``: ``from`` (``client`` or ``agent``), ``t`` (seconds since the header's
  monotonic clock), ``wall`` (Unix time), ``msg`` (the decoded JSON-RPC message) and, on
  remote transports, ``transport`` (connection id, stream, HTTP request, cursor);
* ``raw``: a line that was not JSON (``raw`` holds its text), ``oversize``: one that was
  too large to keep (``size``);
* ``info``: what an ``initialize`` exchange told (protocol version, capabilities, the
  peers' names), written after the message it comes from, since the header is written
  before anything is known and a cassette is append-only;
* ``event``: what happened around the messages (the agent started or exited, a remote
  connection opened or closed).

Rules the writer keeps: records are appended whole lines at a time (one ``write`` per
flush, never a partial record before a complete one), so a reader can follow a
cassette while it is written and a recording cut short stays readable up to its last
complete line; every byte goes through :class:`~acpwire.recorder.redaction.Redactor`
before it is written; records are in the order the recorder saw the messages cross.

The writer's hot path (:meth:`CassetteWriter.messages`) only stamps a batch of message
lines with one prefix and queues it; checking, redacting and writing happen once per
flush (every :data:`FLUSH_INTERVAL` seconds, or when :data:`FLUSH_BYTES` are queued).
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, cast

import msgspec

from .redaction import RedactionSettings, Redactor

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "Cassette",
    "CassetteError",
    "CassetteWriter",
    "Sender",
    "read_cassette",
    "read_records",
]

FORMAT = "acp-cassette"
FORMAT_VERSION = 1
FLUSH_INTERVAL = 0.05
"""Seconds a record may wait before it is written: short enough for a viewer to follow
a live recording, long enough to write a streamed turn in few system calls."""
FLUSH_BYTES = 1 << 20
"""Queued bytes that make the writer flush at once (memory stays bounded)."""

Sender = Literal["client", "agent"]

_raw_list = msgspec.json.Decoder(list[msgspec.Raw])
_any = msgspec.json.Decoder()
_END = b"}\n"


class CassetteError(ValueError):
    """A file that is not a cassette (no header), or one of a newer format."""


def _version() -> str:
    try:
        return metadata.version("acpwire")
    except metadata.PackageNotFoundError:  # pragma: no cover - bare checkout
        return "0"


def _now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


class CassetteWriter:
    """Appends records to a cassette file; thread-safe (the stdio proxy's two pumps and
    its flusher call it at once).

    ``mode`` says how the recording is made; ``command``, ``url`` and ``side`` (the role
    of the process that records in process) go into the header, redacted like the rest.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        mode: str,
        command: Sequence[str] | None = None,
        url: str | None = None,
        side: Sender | None = None,
        redaction: RedactionSettings | None = None,
        flush_interval: float = FLUSH_INTERVAL,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self.path = Path(path)
        self.redactor = Redactor(redaction)
        self.monotonic0 = time.monotonic()
        self.wall0 = time.time()
        self._lock = threading.Lock()  # the queue
        self._write_lock = threading.Lock()  # the file, and the order of flushes
        self._pending: list[tuple[bytes, Sequence[bytes]]] = []
        self._pending_bytes = 0
        self._closed = False
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
        header: dict[str, Any] = {
            "type": "header",
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "recorder": f"acpwire {_version()}",
            "created": _now_iso(),
            "mode": mode,
        }
        if command is not None:
            header["command"] = self.redactor.redact_command(command)
        if url is not None:
            header["url"] = self.redactor.redact_url(url)
        if side is not None:
            header["side"] = side
        header.update(
            cwd=os.getcwd(),
            python=platform.python_version(),
            platform=sys.platform,
            clock={"monotonic": self.monotonic0, "wall": self.wall0},
            redaction={
                "enabled": self.redactor.enabled,
                "files": self.redactor.settings.files,
                "patterns": len(self.redactor.settings.patterns),
                "learned": self.redactor.learned,
            },
        )
        if extra:
            header.update(extra)
        self._write_now(msgspec.json.encode(self.redactor.redact_value(header)) + b"\n")
        self._wake = threading.Event()
        self._flusher = threading.Thread(
            target=self._flush_loop, args=(flush_interval,), name="acp-cassette", daemon=True
        )
        self._flusher.start()

    # -- the hot path ---------------------------------------------------------------

    def _stamp(self, kind: bytes, sender: Sender) -> bytes:
        now = time.monotonic()
        return b'{"type":"%s","from":"%s","t":%.6f,"wall":%.6f,' % (
            kind,
            sender.encode(),
            now - self.monotonic0,
            time.time(),
        )

    def messages(
        self, sender: Sender, lines: Sequence[bytes], transport: Mapping[str, Any] | None = None
    ) -> None:
        """Queue message lines that crossed together (one time stamp for the batch)."""
        if not lines or self._closed:
            return
        prefix = self._stamp(b"message", sender)
        if transport is not None:
            prefix += b'"transport":' + msgspec.json.encode(transport) + b","
        prefix += b'"msg":'
        self._queue(prefix, lines)

    def message(
        self, sender: Sender, line: bytes, transport: Mapping[str, Any] | None = None
    ) -> None:
        """Queue one message line."""
        self.messages(sender, (line,), transport)

    def oversize(self, sender: Sender, size: int) -> None:
        """A message too large to keep: only its size is recorded."""
        self._record(self._stamp(b"oversize", sender) + b'"size":%d}\n' % size)

    def event(self, name: str, **fields: Any) -> None:
        """An event record (``agent-started``, ``agent-exited``, ``connection-opened`` ...)."""
        now = time.monotonic()
        record = {"type": "event", "t": round(now - self.monotonic0, 6), "wall": time.time()}
        record.update(event=name, **fields)
        self._record(msgspec.json.encode(self.redactor.redact_value(record)) + b"\n")

    def _record(self, line: bytes) -> None:
        # A whole record queued as a batch of its own: an empty prefix and no closing brace.
        self._queue(b"", (line,), whole=True)

    def _queue(self, prefix: bytes, lines: Sequence[bytes], *, whole: bool = False) -> None:
        size = len(lines) * (len(prefix) + 2) + sum(map(len, lines))
        with self._lock:
            if self._closed:
                return
            self._pending.append((b"" if whole else prefix, lines))
            self._pending_bytes += size
            full = self._pending_bytes >= FLUSH_BYTES
        if full:
            self.flush()

    # -- flushing ---------------------------------------------------------------------

    def _flush_loop(self, interval: float) -> None:
        while not self._closed:
            self._wake.wait(interval)
            self._wake.clear()
            try:
                self.flush()
            except OSError:
                return  # the disk is gone; the traffic must keep flowing

    def flush(self) -> None:
        """Check, redact and write everything queued (in the order it was queued)."""
        with self._write_lock:
            with self._lock:
                batches, self._pending = self._pending, []
                self._pending_bytes = 0
            if not batches:
                return
            parts: list[bytes] = []
            # One check for the whole flush (the common case); batch by batch if it fails.
            all_well_formed = _well_formed(
                [x for prefix, lines in batches if prefix for x in lines]
            )
            for prefix, lines in batches:
                if not prefix:  # whole records
                    parts.extend(lines)
                elif all_well_formed or _well_formed(lines):
                    parts.append(prefix + (_END + prefix).join(lines) + _END)
                else:
                    parts.extend(_one_by_one(prefix, lines))
            buffer = b"".join(parts)
            if b'"protocolVersion"' in buffer:
                buffer = _with_info(buffer)
            self._write_now(self.redactor.redact_lines(buffer))

    def _write_now(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        """Write what is queued and close the file. Idempotent."""
        if self._closed:
            return
        self.flush()
        with self._lock:
            self._closed = True
        self._wake.set()
        if self._flusher is not threading.current_thread():
            self._flusher.join()
        with self._write_lock:
            os.close(self._fd)

    def __enter__(self) -> CassetteWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _well_formed(lines: Sequence[bytes]) -> bool:
    """Whether every line is one JSON value in valid UTF-8, with no line break: then it
    can be spliced into a record as it is (the common case, checked in one decode)."""
    joined = b",".join(lines)
    if b"\n" in joined or b"\r" in joined:
        return False
    try:
        joined.decode("utf-8")
        return len(_raw_list.decode(b"[" + joined + b"]")) == len(lines)
    except (UnicodeDecodeError, msgspec.DecodeError):
        return False


def _one_by_one(prefix: bytes, lines: Sequence[bytes]) -> Iterator[bytes]:
    """Records for lines of which some are not JSON (kept as text) or span lines."""
    for line in lines:
        try:
            value = _any.decode(line)
        except msgspec.DecodeError:
            text = line.decode("utf-8", "replace")
            raw = prefix.replace(b'"type":"message"', b'"type":"raw"', 1)
            raw = raw[: raw.rindex(b'"msg":')]
            yield raw + b'"raw":' + msgspec.json.encode(text) + _END
        else:
            yield prefix + msgspec.json.encode(value) + _END


def _with_info(buffer: bytes) -> bytes:
    """``buffer`` with an ``info`` record after each ``initialize`` message it holds."""
    out: list[bytes] = []
    for line in buffer.split(b"\n"):
        out.append(line)
        if b'"protocolVersion"' not in line:
            continue
        info = _initialize_info(line)
        if info is not None:
            out.append(msgspec.json.encode(info))
    return b"\n".join(out)


def _initialize_info(line: bytes) -> dict[str, Any] | None:
    try:
        record = _any.decode(line)
    except msgspec.DecodeError:
        return None
    if not isinstance(record, dict) or record.get("type") != "message":
        return None
    record = cast("dict[str, Any]", record)
    msg = record.get("msg")
    if not isinstance(msg, dict):
        return None
    msg = cast("dict[str, Any]", msg)
    body = msg.get("params") if msg.get("method") == "initialize" else msg.get("result")
    if not isinstance(body, dict) or "protocolVersion" not in body:
        return None
    body = cast("dict[str, Any]", body)
    keys = (
        ("protocolVersion", "clientCapabilities", "clientInfo")
        if msg.get("method") == "initialize"
        else ("protocolVersion", "agentCapabilities", "agentInfo", "authMethods")
    )
    info = {k: body[k] for k in keys if k in body}
    return {"type": "info", "from": record.get("from"), "t": record.get("t"), "initialize": info}


# ---------------------------------------------------------------------------- reading


@dataclass
class Cassette:
    """A cassette read back: the header and every complete record after it."""

    path: Path
    header: dict[str, Any]
    records: list[dict[str, Any]]
    damaged: list[int] = field(default_factory=list[int])
    """Line numbers (1-based) that were not records and were skipped."""
    truncated: bool = False
    """The file ends in the middle of a record (a recording cut short)."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The ``message`` records, in order."""
        return [r for r in self.records if r.get("type") == "message"]

    @property
    def info(self) -> dict[str, Any]:
        """What the ``info`` records told, merged: ``protocolVersion``, both peers'
        capabilities and names (empty before the ``initialize`` exchange)."""
        merged: dict[str, Any] = {}
        for r in self.records:
            if r.get("type") == "info" and isinstance(r.get("initialize"), dict):
                merged.update(r["initialize"])
        return merged


def read_records(path: str | os.PathLike[str], offset: int = 0) -> tuple[list[Any], int, int]:
    """The complete lines of ``path`` from byte ``offset``: (decoded values, or None for a
    line that is not JSON; the offset after the last complete line; how many bytes of
    an incomplete last line were left for later). For following a file being written."""
    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read()
    end = data.rfind(b"\n") + 1
    values: list[Any] = []
    for line in data[:end].split(b"\n")[:-1] if end else []:
        try:
            values.append(_any.decode(line))
        except msgspec.DecodeError:
            values.append(None)
    return values, offset + end, len(data) - end


def read_cassette(path: str | os.PathLike[str]) -> Cassette:
    """Read a cassette, whole lines only: a recording cut short is read up to its last
    complete record (``truncated``), lines that are not records are skipped
    (``damaged``). Raises :class:`CassetteError` if the first line is not a header."""
    path = Path(path)
    values, _, left = read_records(path)
    if not values or not isinstance(values[0], dict) or values[0].get("format") != FORMAT:
        raise CassetteError(f"{path}: not an ACP cassette (no {FORMAT} header on line 1)")
    header = cast("dict[str, Any]", values[0])
    if not isinstance(header.get("version"), int) or header["version"] > FORMAT_VERSION:
        raise CassetteError(
            f"{path}: cassette format version {header.get('version')!r}; "
            f"this acpwire reads up to {FORMAT_VERSION}"
        )
    records: list[dict[str, Any]] = []
    damaged: list[int] = []
    for number, value in enumerate(values[1:], start=2):
        if isinstance(value, dict) and isinstance(value.get("type"), str):
            records.append(cast("dict[str, Any]", value))
        else:
            damaged.append(number)
    return Cassette(path, header, records, damaged, truncated=left > 0)
