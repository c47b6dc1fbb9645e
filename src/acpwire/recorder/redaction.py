"""Redaction: secrets are taken out of a recording before any byte of it is written.

Rules this module enforces (docs/recorder.md, "Redaction"; tests/recorder/test_redaction.py):

* **Structured.** In every JSON object of a message, a string under a key that names a
  secret (``authorization``, ``token``, ``secret``, ``password``, ``apiKey``, ``cookie``,
  ``credential``, ``privateKey``, any case, as part of a longer key too) becomes
  ``"[REDACTED]"``; so does every value of an ``env`` list or map (the environment
  variables a client passes to MCP servers, or an agent to a terminal) and the value of
  every header whose name names a secret (``headers`` of HTTP MCP servers).
* **Learned.** A value taken out that way, or the value of an environment variable of
  this process whose name names a secret, is then replaced wherever else it appears (an
  agent that echoes the key it was given), when it is at least :data:`MIN_SECRET` long.
* **Shapes.** Strings shaped like well-known API keys and tokens (:data:`KEY_SHAPES`,
  plus the patterns the user adds) are replaced in any text.
* **Files** (opt-in, ``--redact-files``): the text of ``fs/read_text_file`` answers and
  ``fs/write_text_file`` requests becomes ``[REDACTED file: N bytes, sha256:...]``, so a
  replay can still check that a client read the same file.

Replacements are plain strings, so a redacted message keeps its schema shape (a
replayed message stays valid ACP). The cheap path matters: a buffer of records is
searched once for anything that could need the structured pass, and only the lines
that match are decoded (:meth:`Redactor.redact_lines`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import msgspec

__all__ = [
    "KEY_SHAPES",
    "MIN_SECRET",
    "REDACTED",
    "Redactor",
    "RedactionSettings",
    "file_placeholder",
    "secret_name",
]

REDACTED = "[REDACTED]"
MIN_SECRET = 8
"""Shortest value replaced wherever it appears: a shorter one (``1``, ``true``) would
take ordinary words with it."""

_SECRET_NAME = re.compile(
    r"authorization|token|secret|passw(?:or)?d|api[_-]?key|apikey|cookie|credential"
    r"|private[_-]?key|session[_-]?key|access[_-]?key",
    re.IGNORECASE,
)

KEY_SHAPES: tuple[tuple[str, str], ...] = (
    ("sk-", r"sk-[A-Za-z0-9_\-]{20,}"),  # OpenAI, Anthropic (sk-ant-...)
    ("gh", r"gh[pousr]_[A-Za-z0-9]{30,}"),  # GitHub tokens
    ("github_pat_", r"github_pat_[A-Za-z0-9_]{22,}"),
    ("glpat-", r"glpat-[A-Za-z0-9_\-]{20,}"),  # GitLab
    ("xox", r"xox[abposr]-[A-Za-z0-9\-]{10,}"),  # Slack
    ("AKIA", r"AKIA[0-9A-Z]{16}"),  # AWS access key id
    ("AIza", r"AIza[0-9A-Za-z_\-]{35}"),  # Google API key
    ("hf_", r"hf_[A-Za-z0-9]{30,}"),  # Hugging Face
    ("eyJ", r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),  # JWT
    ("earer", r"[Bb]earer\s+[A-Za-z0-9._~+/\-]{8,}=*"),
    ("EARER", r"BEARER\s+[A-Za-z0-9._~+/\-]{8,}=*"),
    # A PEM private key inside a JSON string (its new lines are \n escapes).
    (
        "-----BEGIN",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[^\"\\]|\\.)*?-----END [A-Z ]*PRIVATE KEY-----",
    ),
)
"""Well-known credentials: (a substring every match holds, the pattern). Each pattern
runs only where its substring is, one at a time: an alternation of them all would run
at every byte (Python's ``re`` has no multi-pattern search)."""

# What may need the structured pass: env and header lists, and the free-form places a
# secret-named key can be in (``_meta``, extension methods, elicitation answers). Plain
# substring searches: a regular expression over every byte costs more than the rest of
# the recording (benchmarks/README.md, "Recording").
_STRUCTURED_NEEDLES = (b'"env"', b'"headers"', b'"_', b'"accept"')
_FILE_NEEDLES = (b'"fs/', b'"content":"', b'"content": "')
# Every shape of KEY_SHAPES but Bearer and PEM has a run of at least this many letters
# and digits; ordinary text, JSON keys and UUIDs have none.
_RUN = b"a" * 16
_ALNUM = bytes(0x61 if chr(c).isalnum() and c < 128 else 0x20 for c in range(256))
_SHAPE_NEEDLES = (b"earer", b"EARER", b"-----BEGIN")
_SENSITIVE_FLAG = re.compile(r"^--?[\w-]*(?:" + _SECRET_NAME.pattern + r")[\w-]*$", re.I)


def _other(sender: str) -> str:
    return "client" if sender == "agent" else "agent"


def secret_name(name: str) -> bool:
    """Whether a key, header or variable name names a secret (see the module docstring)."""
    return _SECRET_NAME.search(name) is not None


def file_placeholder(text: str) -> str:
    """What file text becomes under ``--redact-files``: its size and hash, nothing else."""
    data = text.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(data).hexdigest()
    return f"[REDACTED file: {len(data)} bytes, sha256:{digest}]"


@dataclass
class RedactionSettings:
    """What to take out. The defaults are on; ``enabled=False`` records everything."""

    enabled: bool = True
    patterns: Sequence[str] = ()
    """Regular expressions added to :data:`KEY_SHAPES` (``--redact-pattern``)."""
    secrets: Sequence[str] = ()
    """Literal values to replace wherever they appear (``--redact-value``)."""
    files: bool = False
    """Replace file text read and written through the client by size and hash."""
    environment: Mapping[str, str] | None = field(default=None)
    """Whose variables' secret-named values are learned (None: this process's)."""


class Redactor:
    """Applies :class:`RedactionSettings` to buffers of JSON lines. Not thread-safe: the
    cassette writer calls it under its write lock."""

    def __init__(self, settings: RedactionSettings | None = None) -> None:
        self.settings = settings = settings or RedactionSettings()
        self.enabled = settings.enabled
        self._shapes = [(n.encode(), re.compile(p.encode())) for n, p in KEY_SHAPES]
        # A bad user pattern fails here, with re's message.
        self._patterns = [re.compile(p.encode()) for p in settings.patterns]
        self._literals: dict[bytes, None] = {}
        self._learned_text: set[str] = set()
        env = os.environ if settings.environment is None else settings.environment
        for name, value in env.items():
            if secret_name(name):
                self.learn(value)
        for value in settings.secrets:
            self.learn(value, min_length=1)
        self._needles = _STRUCTURED_NEEDLES + (_FILE_NEEDLES if settings.files else ())
        # (sender, encoded id) of fs/read_text_file requests, whose answers carry file text.
        self._file_reads: set[tuple[str, bytes]] = set()

    @property
    def learned(self) -> int:
        """How many literal secrets are replaced wherever they appear."""
        return len(self._literals)

    def learn(self, value: str, *, min_length: int = MIN_SECRET) -> None:
        """Replace ``value`` wherever it appears from now on (if long enough)."""
        if len(value) < min_length or value in self._learned_text:
            return
        self._learned_text.add(value)
        # As it appears inside a JSON string, and as it is (a header record, a raw line).
        self._literals[msgspec.json.encode(value)[1:-1]] = None
        self._literals[value.encode("utf-8", "surrogatepass")] = None

    # -- whole buffers ------------------------------------------------------------

    def redact_lines(self, buffer: bytes) -> bytes:
        """Redact a buffer of complete JSON lines (records)."""
        if not self.enabled:
            return buffer
        needles = self._needles
        if any(n in buffer for n in needles):
            buffer = b"\n".join(
                self._structured_line(line) if any(n in line for n in needles) else line
                for line in buffer.split(b"\n")
            )
        return self.redact_text(buffer)

    def redact_text(self, data: bytes) -> bytes:
        """The learned literals and the key shapes, replaced in any bytes."""
        if not self.enabled:
            return data
        for literal in self._literals:
            if literal in data:
                data = data.replace(literal, b"[REDACTED]")
        if any(n in data for n in _SHAPE_NEEDLES) or _RUN in data.translate(_ALNUM):
            for needle, shape in self._shapes:
                if needle in data:
                    data = shape.sub(b"[REDACTED]", data)
        for pattern in self._patterns:
            data = pattern.sub(b"[REDACTED]", data)
        return data

    def _structured_line(self, line: bytes) -> bytes:
        try:
            record = msgspec.json.decode(line)
        except msgspec.DecodeError:
            return line
        if not isinstance(record, dict):
            return line
        self.redact_record(cast("dict[str, Any]", record))
        return msgspec.json.encode(record)

    # -- decoded values ---------------------------------------------------------------

    def redact_record(self, record: dict[str, Any]) -> None:
        """Redact one decoded cassette record in place (its message and transport data)."""
        message = record.get("msg")
        if self.settings.files and isinstance(message, dict):
            self._redact_files(str(record.get("from")), cast("dict[str, Any]", message))
        for key in ("msg", "transport", "headers", "command", "info"):
            if key in record:
                record[key] = self.redact_value(record[key])

    def redact_value(self, value: Any) -> Any:
        """``value`` with every secret-named string, env value and secret header taken out."""
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for k, v in cast("dict[str, Any]", value).items():
                if isinstance(v, str) and secret_name(k):
                    out[k] = self._take(v)
                elif k == "env":
                    out[k] = self._redact_env(v)
                elif k == "headers":
                    out[k] = self._redact_headers(v)
                else:
                    out[k] = self.redact_value(v)
            return out
        if isinstance(value, list):
            return [self.redact_value(v) for v in value]
        return value

    def _take(self, secret: str) -> str:
        if secret == REDACTED:
            return secret
        self.learn(secret)
        return REDACTED

    def _redact_env(self, env: Any) -> Any:
        if isinstance(env, dict):
            return {k: self._take(v) if isinstance(v, str) else v for k, v in env.items()}
        if isinstance(env, list):
            out = []
            for item in env:
                if isinstance(item, dict) and isinstance(item.get("value"), str):
                    item = {**item, "value": self._take(item["value"])}
                out.append(item)
            return out
        return self.redact_value(env)

    def _redact_headers(self, headers: Any) -> Any:
        if isinstance(headers, dict):
            return {
                k: self._take(v) if isinstance(v, str) and secret_name(str(k)) else v
                for k, v in headers.items()
            }
        if isinstance(headers, list):
            out = []
            for item in headers:
                if (
                    isinstance(item, dict)
                    and secret_name(str(item.get("name", "")))
                    and isinstance(item.get("value"), str)
                ):
                    item = {**item, "value": self._take(item["value"])}
                elif isinstance(item, list) and len(item) == 2 and secret_name(str(item[0])):
                    item = [item[0], self._take(str(item[1]))]
                out.append(item)
            return out
        return self.redact_value(headers)

    def _redact_files(self, sender: str, message: dict[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params")
        if method == "fs/read_text_file" and "id" in message:
            self._file_reads.add((sender, msgspec.json.encode(message["id"])))
        elif method == "fs/write_text_file" and isinstance(params, dict):
            content = params.get("content")
            if isinstance(content, str):
                params["content"] = file_placeholder(content)
        elif (
            method is None
            and (asked := (_other(sender), msgspec.json.encode(message.get("id"))))
            in self._file_reads
        ):
            self._file_reads.discard(asked)
            result = message.get("result")
            if isinstance(result, dict) and isinstance(result.get("content"), str):
                result["content"] = file_placeholder(result["content"])

    def redact_url(self, url: str) -> str:
        """``url`` with its password and the values of secret-named query parameters
        taken out (``?token=...``)."""
        if not self.enabled:
            return url
        parts = urlsplit(url)
        query = urlencode(
            [(k, self._take(v) if secret_name(k) else v) for k, v in parse_qsl(parts.query)],
            safe="[]",
        )
        netloc = parts.netloc
        if parts.password:
            netloc = netloc.replace(f":{parts.password}@", f":{self._take(parts.password)}@", 1)
        return urlunsplit(parts._replace(query=query, netloc=netloc))

    def redact_command(self, argv: Iterable[str]) -> list[str]:
        """A command line with the value of every secret-named option taken out
        (``--token X``, ``--api-key=X``); the literal and shape passes come later."""
        out: list[str] = []
        hide_next = False
        for arg in argv:
            if hide_next:
                out.append(self._take(arg))
                hide_next = False
                continue
            name, eq, value = arg.partition("=")
            if _SENSITIVE_FLAG.match(name):
                if eq:
                    out.append(f"{name}={self._take(value)}")
                else:
                    out.append(arg)
                    hide_next = True
                continue
            out.append(arg)
        return out if self.enabled else list(argv)
