"""Agent text made safe for a terminal: one function between what an agent sends and
what ``acp`` shows.

An agent decides every string ``acp chat`` shows of it: messages, thoughts, tool
titles, diffs, terminal output, plan entries, command, mode and model names, auth
methods, its name and version, session titles, error messages, what it writes on
stderr. A terminal obeys control characters wherever they come from, so an agent
that sends them can move the cursor, erase lines, hide text (SGR 8, conceal), set the
window title (OSC 0), write the clipboard (OSC 52) or dress a link (OSC 8), and so
draw a permission prompt that says something else than the one acpwire asks.
:func:`sanitize` is applied where agent data becomes display text (the renderers of
:mod:`acpwire.cli.render`, the chat app's widgets and notes, the one-shot printout,
``acp inspect``'s log) and keeps these rules:

* **Escape sequences are removed whole**: CSI (``ESC [`` or 8-bit ``0x9b``, colours
  included: acpwire styles text itself), the strings OSC, DCS, SOS, PM and APC up to
  their terminator (BEL, ``ESC \\`` or ``0x9c``), and the short ``ESC`` sequences. An
  introducer that never ends loses its ``ESC``; what follows stays as text.
* **Controls**: every other C0 control but newline and tab, DEL, and every C1 control
  (U+0080-U+009F) is removed; CR LF becomes LF and a lone CR goes (it would send the
  cursor back to overwrite the line).
* **Bidi controls** (embeddings, overrides, isolates and marks: U+061C, U+200E,
  U+200F, U+202A-U+202E, U+2066-U+2069) are removed everywhere: a terminal that
  applies bidi would draw ``Reject\\u202e...`` in another order than acpwire laid it
  out (the "Trojan Source" trick). RTL text itself is kept.
* ``line=True``, for names and labels (titles, option names, command names, plan
  entries, ...): newline and tab become spaces, so a title cannot draw lines of its
  own under it (a fake option list), and **invisible format characters** (zero-width
  space, joiners, word joiner, soft hyphen, BOM, tag characters, ...) are removed, so
  two labels that look alike are alike. Message text keeps ZWJ and ZWNJ: emoji
  sequences and scripts such as Persian need them.

Rich markup is not this module's concern: agent text reaches Rich and Textual only
inside ``Text`` objects (or escaped, where a widget takes markup strings only), never
as markup. The label of a permission option's kind is acpwire's own
(:data:`acpwire.cli.render.OPTION_KIND_LABELS`), never the agent's name for it.

:func:`json_line` is the same guard for ``--json`` output: the exact wire value,
with C1 and bidi characters written as ``\\u`` escapes (``json.dumps`` escapes only
C0).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["json_line", "sanitize"]

_ESCAPE_SEQUENCE = re.compile(
    r"""
    (?:\x1b\[|\x9b) [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]     # CSI: parameters, final byte
  | (?:\x1b[\]P^_X]|[\x90\x98\x9d\x9e\x9f])                 # OSC, DCS, PM, APC, SOS strings
    [^\x07\x1b\x80-\x9f]* (?:\x07|\x1b\\|\x9c)              # ... up to their terminator
  | \x1b [\x20-\x2f]* [\x30-\x7e]                           # ESC 7, ESC ( B, ESC c, ...
    """,
    re.VERBOSE,
)
"""The string body excludes ESC and C1, so each match attempt stops at the next
introducer: the scan stays linear however many unterminated introducers a text has."""

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROLS = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_INVISIBLE = re.compile(
    f"[\x00-\x1f\x7f-\x9f{_BIDI}\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200d\u2060-\u2064\u206a-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\u2028\u2029\U000e0000-\U000e0fff]"
)
"""For labels: every control, the characters a terminal draws as nothing, and line breaks."""
_LINE_BREAKS = re.compile(r"\r\n|[\n\t\r\x0b\x0c\u2028\u2029\x85]")


def sanitize(text: str, *, line: bool = False) -> str:
    """``text`` without anything a terminal would obey (see the module docstring).

    ``line``: for a name or label, on one line and without invisible characters.
    """
    if line:
        if _INVISIBLE.search(text) is None:
            return text
        text = _LINE_BREAKS.sub(" ", _ESCAPE_SEQUENCE.sub("", text))
        return _INVISIBLE.sub("", text)
    if _CONTROLS.search(text) is None:
        return text  # the common case, and fast for a 20 MB message
    text = _ESCAPE_SEQUENCE.sub("", text.replace("\r\n", "\n"))
    return _CONTROLS.sub("", text)


_JSON_UNSAFE = re.compile(f"[\x7f-\x9f{_BIDI}\u2028\u2029]")


def json_line(value: Any) -> str:
    """``value`` as one line of JSON, safe to print on a terminal, same value on parse."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    # Outside strings json.dumps writes ASCII only, so these are inside strings, where
    # a \u escape stands for the same character.
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
