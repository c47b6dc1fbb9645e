"""The demo's plain text: the words of its command language and how it shows things.

Nothing here knows ACP; :mod:`acpwire.demo.agent` uses these for every command.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar


def split_args(text: str) -> list[str]:
    """Shell-like words (quotes group words); unbalanced quotes fall back to plain words."""
    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace_split = True
    lexer.escape = ""  # keep backslashes: ``\n`` is unescaped by the command itself
    try:
        return list(lexer)
    except ValueError:
        return text.split()


def unescape(text: str) -> str:
    r"""``\n`` and ``\t`` in command arguments become a newline and a tab."""
    return text.replace("\\n", "\n").replace("\\t", "\t")


_Number = TypeVar("_Number", int, float)


def number_argument(
    args: list[str], parse: Callable[[str], _Number], default: _Number, low: _Number, high: _Number
) -> _Number | None:
    """A command's first argument as a number from ``low`` to ``high`` (``default`` when
    there is none); None when it is not such a number, for the command's usage line."""
    try:
        value = parse(args[0]) if args else default
    except ValueError:
        return None
    return value if low <= value <= high else None


def fence(text: str, language: str = "") -> str:
    """A Markdown code block that survives backticks inside ``text``."""
    ticks = "```"
    while ticks in text:
        ticks += "`"
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{ticks}{language}\n{body}{ticks}\n"


def language_of(path: str) -> str:
    suffix = Path(path).suffix.lower().lstrip(".")
    return {"py": "python", "md": "markdown", "js": "javascript", "ts": "typescript",
            "rs": "rust", "sh": "bash", "yml": "yaml"}.get(suffix, suffix)  # fmt: skip


def line_count(text: str) -> int:
    """Lines as a person counts them: a last line without a newline counts too."""
    return len(text.splitlines())


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def shown_value(value: object) -> str:
    """An option value as the user types it (``on``/``off``, not Python's ``True``)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
