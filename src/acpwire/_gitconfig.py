"""Where git would run code from, for a file about to be written: hooks folders and config files.

The sandbox (:mod:`acpwire.sandbox`) refuses writes into the folders git runs hooks from
and into the configuration files git reads, because a file written there runs code at the
user's next ``git commit`` (a hook) or ``git status`` (``core.fsmonitor`` in a config).
This module finds both for one path, the way git would for a command run in its folder:

* **Repositories**: every folder above the file that holds a ``.git`` entry, nearest
  first and all the way up (a nested repository's file may be named by an outer one's
  ``core.hooksPath``). A ``.git`` folder is the git dir; a ``.git`` file (linked
  worktrees, submodules) names it with ``gitdir:``, and a ``commondir`` file in it names
  the shared git dir holding ``config``, ``hooks`` and ``config.worktree``.
* **Config files**: each repository's ``config`` and ``config.worktree``, the global ones
  (``$GIT_CONFIG_GLOBAL``, ``$XDG_CONFIG_HOME/git/config`` or ``~/.config/git/config``,
  ``~/.gitconfig``), the system ones (``$GIT_CONFIG_SYSTEM``, ``/etc/gitconfig`` and the
  ``etc/gitconfig`` of the usual other prefixes), and every file they include
  (``[include]`` and ``[includeIf]``, up to git's depth of 10).
* **Hooks folders**: each repository's default ``hooks`` folder in its git dir, and every
  ``core.hooksPath`` found in any of those files: ``~`` expanded, a relative one taken
  relative to the repository's work tree (where git runs hooks).

Everything errs on the side of protecting more: every ``includeIf`` is followed whatever
its condition, and every ``core.hooksPath`` seen counts, not only the one git would use
(the last). Protecting a folder too many costs the agent one refused write; missing one
runs its code.

Why the files are read here rather than asked of ``git config``: git finds a repository
by walking up from its working directory and takes a *bare* repository (a folder with
``HEAD``, ``objects/`` and ``refs/``) as readily as a ``.git`` folder. An agent may create
those in the workspace (it may not create a ``.git``), so ``git config`` run next to the
file could answer from a repository the agent planted and miss the user's real
``core.hooksPath``. The reader here only follows ``.git`` entries, which the agent cannot
write; it also needs no ``git`` on the machine, no process per write, and behaves the same
whatever git version is installed. It reads the subset of the config syntax these keys
need (sections, subsections, quoting, escapes, comments, continuation lines); a file it
cannot read is skipped.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["GitPaths", "git_guard", "git_paths"]

_MAX_INCLUDE_DEPTH = 10
"""Git's own limit on nested includes."""
_MAX_CONFIG_BYTES = 1 << 20
"""More than any real config file; a bigger one is read only this far."""
_SYSTEM_CONFIGS = ("/etc/gitconfig", "/usr/local/etc/gitconfig", "/opt/homebrew/etc/gitconfig")
"""``$(prefix)/etc/gitconfig`` of distribution, source-built and Homebrew gits."""
_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)


@dataclass
class GitPaths:
    """What git would run code from, for one path: ``hooks`` maps each resolved hooks
    folder to how it was named (for messages); ``config_files`` are resolved. ``home``
    is the home folder ``~`` stands for."""

    home: Path
    hooks: dict[Path, str] = field(default_factory=dict[Path, str])
    config_files: set[Path] = field(default_factory=set[Path])

    def guarding(self, path: Path) -> str | None:
        """Why writing ``path`` (resolved) would plant code git runs, or ``None``."""
        key = _fold(path)
        for folder, named in self.hooks.items():
            if key == _fold(folder) or key.startswith(_fold(folder) + os.sep):
                return f"it is in git's hooks folder ({named})"
        if any(key == _fold(config) for config in self.config_files):
            return "it is a configuration file git reads"
        return None

    def add_hooks(self, worktree: Path, value: str) -> None:
        """Record ``core.hooksPath = value`` of a repository whose work tree is ``worktree``."""
        self.hooks.setdefault(_real(worktree / self.expand(value)), f"core.hooksPath = {value}")

    def expand(self, value: str) -> str:
        """``~`` and ``~/...`` as git expands them (``~user/`` through the password database)."""
        if value == "~" or value.startswith("~/"):
            return str(self.home) + value[1:]
        return os.path.expanduser(value)

    def read_config(self, path: Path, depth: int = 0) -> list[str]:
        """The ``core.hooksPath`` values of a config file and its includes; records the files."""
        real = _real(path)
        if real in self.config_files:
            return []
        self.config_files.add(real)
        text = _read_small(path)
        if text is None:
            return []
        values: list[str] = []
        for section, subsection, name, value in parse_config(text):
            if not value:
                continue
            if section == "core" and subsection is None and name == "hookspath":
                values.append(value)
            elif section in ("include", "includeif") and name == "path":
                if depth < _MAX_INCLUDE_DEPTH:
                    values += self.read_config(path.parent / self.expand(value), depth + 1)
        return values


def git_guard(path: Path, environ: Mapping[str, str] = os.environ) -> str | None:
    """Why writing ``path`` (absolute, resolved) would plant code git runs, or ``None``."""
    return git_paths(path, environ).guarding(path)


def git_paths(path: Path, environ: Mapping[str, str] = os.environ) -> GitPaths:
    """The hooks folders and config files of every repository above ``path`` (absolute, resolved)."""
    found = GitPaths(Path(environ.get("HOME") or os.path.expanduser("~")))
    shared: list[str] = []
    for name in _global_configs(environ, found):
        shared += found.read_config(name)
    for value in shared:
        # An absolute global hooksPath serves every repository, even one made later.
        if os.path.isabs(found.expand(value)):
            found.add_hooks(Path("/"), value)
    for worktree, gitdir, common in _repositories(path):
        found.hooks.setdefault(_real(common / "hooks"), str(common / "hooks"))
        values = list(shared)
        for name in (common / "config", gitdir / "config.worktree"):
            values += found.read_config(name)
        for value in values:
            found.add_hooks(worktree, value)
    return found


# ---------------------------------------------------------------------- where


def _global_configs(environ: Mapping[str, str], found: GitPaths) -> Iterator[Path]:
    for variable in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"):
        value = environ.get(variable)
        if value:
            yield Path(found.expand(value))
    xdg = environ.get("XDG_CONFIG_HOME")
    config_home = Path(xdg) if xdg and os.path.isabs(xdg) else found.home / ".config"
    yield config_home / "git" / "config"
    yield found.home / ".gitconfig"
    for name in _SYSTEM_CONFIGS:
        yield Path(name)


def _repositories(path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """(work tree, git dir, common git dir) of every ``.git`` above ``path``, nearest first."""
    for folder in path.parents:
        dotgit = folder / ".git"
        try:
            info = os.stat(dotgit)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            gitdir = dotgit
        elif stat.S_ISREG(info.st_mode):
            named = _read_small(dotgit)
            if named is None or not named.startswith("gitdir:"):
                continue
            gitdir = folder / named.removeprefix("gitdir:").strip()
        else:
            continue
        common = _read_small(gitdir / "commondir")
        yield folder, gitdir, gitdir / common.strip() if common else gitdir


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _fold(path: Path) -> str:
    # Case-insensitive, whatever the file system: a folder too many is harmless.
    return str(path).casefold()


# ---------------------------------------------------------------------- reading


def _read_small(path: Path) -> str | None:
    """The start of a regular file as text, or ``None`` (missing, unreadable, not a file)."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, _MAX_CONFIG_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace")


def parse_config(text: str) -> Iterator[tuple[str, str | None, str, str | None]]:
    """``(section, subsection, name, value)`` for each variable of a git config file.

    Section and variable names are lower-cased (git compares them so), a subsection is
    kept as written (``None`` when there is none), a variable without ``=`` has the
    value ``None`` (git's "true"). Lines that are not valid config are skipped.
    """
    pos, end = 0, len(text)
    section, subsection = "", None
    while pos < end:
        char = text[pos]
        if char.isspace():
            pos += 1
        elif char in "#;":
            pos = _line_end(text, pos)
        elif char == "[":
            close = text.find("]", pos)
            if close < 0:
                return
            section, subsection = _header(text[pos + 1 : close])
            pos = close + 1
        elif char.isalpha():
            start = pos
            while pos < end and (text[pos].isalnum() or text[pos] == "-"):
                pos += 1
            name = text[start:pos].lower()
            while pos < end and text[pos] in " \t":
                pos += 1
            if pos < end and text[pos] == "=":
                value, pos = _value(text, pos + 1)
                yield section, subsection, name, value
            elif pos >= end or text[pos] in "\r\n#;":
                yield section, subsection, name, None
            else:
                pos = _line_end(text, pos)
        else:
            pos = _line_end(text, pos)


def _line_end(text: str, pos: int) -> int:
    found = text.find("\n", pos)
    return len(text) if found < 0 else found + 1


def _header(inside: str) -> tuple[str, str | None]:
    """``core`` -> (core, None); ``includeIf "gitdir:~/w/"`` -> (includeif, gitdir:~/w/);
    the old ``[section.sub]`` -> (section, sub)."""
    name, _, rest = inside.strip().partition(" ")
    rest = rest.strip()
    if rest.startswith('"') and rest.endswith('"') and len(rest) >= 2:
        sub = rest[1:-1]
        return name.lower(), sub.replace('\\"', '"').replace("\\\\", "\\")
    if "." in name:
        head, _, sub = name.partition(".")
        return head.lower(), sub.lower()
    return name.lower(), None


_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", '"': '"', "\\": "\\"}


def _value(text: str, pos: int) -> tuple[str, int]:
    """A value from ``pos`` (after ``=``) to the end of its line: quotes, escapes and
    continuation lines applied, unquoted leading and trailing blanks dropped."""
    out: list[str] = []
    keep = 0  # length of ``out`` up to its last character that is not an unquoted blank
    quoted = False
    end = len(text)
    while pos < end:
        char = text[pos]
        if char == "\n" or (char in "#;" and not quoted):
            break
        pos += 1
        if char == "\\" and pos < end:
            escaped = text[pos]
            pos += 1
            if escaped == "\n":
                continue
            if escaped == "\r" and pos < end and text[pos] == "\n":
                pos += 1
                continue
            out.append(_ESCAPES.get(escaped, escaped))
            keep = len(out)
        elif char == '"':
            quoted = not quoted
            keep = len(out)
        elif char in " \t\r" and not quoted:
            if out:
                out.append(char)
        else:
            out.append(char)
            keep = len(out)
    return "".join(out[:keep]), _line_end(text, pos)
