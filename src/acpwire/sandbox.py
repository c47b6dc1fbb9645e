"""One file confinement for both roles: the client's ``fs/*`` methods and the agent's local fallback.

A :class:`Sandbox` reads and writes UTF-8 text files beneath a set of root folders. The
client serves ``fs/read_text_file`` / ``fs/write_text_file`` through it
(:class:`acpwire.client.fs.WorkspaceFiles`), and an agent's ``Turn`` uses it when the client
offers no file system and the handler passed ``fallback=True``. Its calls are synchronous
and block; async callers run them in a thread.

Guarantees, for a caller that does not trust the paths it is given (an agent, a model):

* **Nothing outside the roots is opened or created**, even while someone swaps folders for
  symbolic links during the call. A path is first resolved with :func:`os.path.realpath`
  (symlinks followed, ``..`` applied) only to decide which root it belongs to and which
  components lead to it below that root; a result outside every root answers
  ``outside_workspace`` and is never opened. The file is then reached from a descriptor of
  the root, one component at a time, each folder opened relative to the previous one
  (``dir_fd=``) with ``O_DIRECTORY | O_NOFOLLOW`` and the file itself with ``O_NOFOLLOW``.
  A component that became a symbolic link after the resolution is refused
  (``path_changed``), never followed, so the only files reachable are those a descriptor
  chain from the root leads to.
* **Symbolic links inside the roots still work**: a link whose target lies inside a root is
  followed at resolution (the file is read or written at the target, the link stays); one
  leading outside, to ``/proc`` or to a device, resolves outside and is refused.
* **Reads** open regular files only (``O_NONBLOCK`` then ``fstat``, so a FIFO or device
  never blocks and is refused as ``not_regular_file``), decode UTF-8 strictly
  (``not_utf8``), and return at most ``max_read_bytes`` (``too_large``); a line range is
  streamed, never loaded whole. Lines are counted by ``"\\n"`` and returned as on disk.
* **A line read does bounded work**: it looks for its first line within the first
  ``max_scan_bytes`` of the file (``line_out_of_reach`` beyond), and then reads at most
  ``max_read_bytes``. Without the bound, ``line=2`` of a 2 GiB file without a newline
  (a sparse file costs nothing on disk) read all of it, seconds of CPU per call.
* **Writes are atomic**: the text goes to a temporary file created next to the target
  through the parent folder's descriptor (``O_CREAT | O_EXCL | O_NOFOLLOW``), is flushed to
  disk and renamed over the target within that same folder; on any failure the temporary
  file is removed. Missing folders are created the same way (``mkdir`` relative to the
  parent's descriptor).
* **No write makes code executable**: a new file is created ``0o666`` less the umask,
  never with an execute bit, whatever its content; an existing file keeps its permission
  bits, so overwriting an executable one needs the user's permission (below).
* **Protected paths**: a write is refused (``protected_path``) when a component of its
  resolved path below its root matches one of the ``protected`` patterns
  (case-insensitively; :data:`DEFAULT_PROTECTED_NAMES`: version control folders, git hook
  managers' files and folders, files shells run on entering a folder), or, with
  ``protect_git``, when it lies in a folder git runs hooks from or is a config file git
  reads (``core.hooksPath`` and includes, read from the repository's and the user's
  config: :mod:`acpwire._gitconfig`). Each runs code at the user's next ``git commit``,
  ``git status`` or ``cd``.
* **Writes that need the user's permission** raise :class:`NeedsPermission`
  (``needs_permission``) unless the caller passes the concern in ``confirmed=``: a file
  whose name matches a ``confirm`` pattern (:data:`DEFAULT_CONFIRM_NAMES`: ``.env``, which
  autoenv runs and direnv loads, and mise's config, whose hooks run on ``cd``), and
  overwriting an executable file. The sandbox cannot ask anyone: the toolkit client turns
  the error into a question to its permission policy and writes again if allowed.
* **Errors** are :mod:`acpwire.protocol.errors` classes carrying ``data`` with the ``path``
  as given and a ``reason``; the text of OS errors is never passed on.

Why per-component ``openat`` and not Linux's ``openat2(RESOLVE_BENEATH)``: the walk gives
the same guarantee with calls Python's :mod:`os` has on every POSIX system (macOS and
older kernels included), costs a few extra system calls per folder level, and leaves one
code path to test; ``openat2`` would need ``ctypes``, per-architecture syscall numbers and
this walk anyway as the fallback.

Not covered: the root folders themselves are opened by path on each call (they are chosen
by the user, not by the agent); a hard link inside a root to a file outside (it cannot be
made through this API, and a write replaces the link rather than the shared file); bind
mounts; and anything a command the agent runs in a terminal does. POSIX only: needs
``dir_fd`` support in :mod:`os`.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import secrets
import stat
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import BinaryIO, Literal

from ._gitconfig import git_guard
from .protocol.errors import InternalError, InvalidParams, RequestError, ResourceNotFound

__all__ = [
    "DEFAULT_CONFIRM_NAMES",
    "DEFAULT_MAX_READ_BYTES",
    "DEFAULT_MAX_SCAN_BYTES",
    "DEFAULT_PROTECTED_NAMES",
    "Concern",
    "NeedsPermission",
    "Sandbox",
    "SandboxPath",
    "check_line_range",
]

DEFAULT_MAX_READ_BYTES = 32 * 1024 * 1024
"""Largest text one read returns by default (32 MiB): far above any source file, far below
what would strain a client's memory or an agent's context."""

DEFAULT_MAX_SCAN_BYTES = 64 * 1024 * 1024
"""How far into a file a line read looks for its first line by default (64 MiB): logs and
generated files well past any source file, about a tenth of a second of reading."""

_VCS_NAMES: frozenset[str] = frozenset({".git", ".hg", ".svn", ".bzr", ".jj"})
"""Folders of version control internals: their config and hooks run code on the next VCS command."""

_HOOK_MANAGER_NAMES: frozenset[str] = frozenset(
    {
        ".husky",  # husky: hook scripts (core.hooksPath = .husky/_ or .husky)
        ".githooks",  # the usual core.hooksPath folder
        ".git-hooks",  # overcommit's own hooks
        ".overcommit.yml",
        ".pre-commit-config.yaml",  # pre-commit: "repo: local" hooks run any command
        "lefthook.*",  # lefthook.yml, .json, .toml: commands run on commit
        "lefthook-local.*",
        ".lefthook*",  # .lefthook.yml, .lefthook-local.yml, and the .lefthook/ scripts folder
    }
)
"""Files and folders of git hook managers: what they hold runs on ``git commit``."""

_ENTER_FOLDER_NAMES: frozenset[str] = frozenset(
    {
        ".envrc",  # direnv: sourced by the shell on cd
        ".env.leave",  # autoenv: run on leaving the folder
        ".autoenv*",  # zsh-autoenv: .autoenv.zsh, .autoenv_leave.zsh
    }
)
"""Scripts a shell extension runs on entering (or leaving) a folder."""

DEFAULT_PROTECTED_NAMES: frozenset[str] = _VCS_NAMES | _HOOK_MANAGER_NAMES | _ENTER_FOLDER_NAMES
"""Never written by default: version control internals, hook managers' files, folder scripts."""

DEFAULT_CONFIRM_NAMES: frozenset[str] = frozenset(
    {
        ".env",  # autoenv sources it on cd; direnv's dotenv loads it
        "mise.toml",  # mise: [hooks] enter = ... runs on cd once the file is trusted
        ".mise.toml",
        "mise.local.toml",
        ".mise.local.toml",
    }
)
"""Written only with the user's permission by default: files that are settings to most
tools and code to some (see :class:`NeedsPermission`)."""

Concern = Literal["sensitive_file", "executable"]
"""Why a write needs the user's permission: its name is a ``confirm`` pattern, or it
would overwrite an executable file."""

_CONCERNS: dict[str, str] = {
    "sensitive_file": "tools may load or run this file on their own (a shell on cd)",
    "executable": "this would overwrite an executable file",
}
_EXECUTE_BITS = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH

_CHUNK = 1 << 20
_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
# O_PATH (Linux) opens a folder for use as dir_fd without needing read permission on it.
_DIR_FLAGS: int = (
    getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0) | _O_NOFOLLOW | _O_CLOEXEC
)
_TEMP_NAME_KEEP = 100
"""Characters of the target's name kept in its temporary file's name (names max out at 255)."""


class NeedsPermission(InvalidParams):
    """A write the user has to allow first: -32602, ``data.reason == "needs_permission"``.

    ``concern`` says why (:data:`Concern`). A caller that asked the user and was allowed
    writes again with the concern in ``confirmed=``; the sandbox checks again then, so a
    second concern (a ``.env`` that is also executable) is asked about in turn.
    """

    def __init__(self, path: str, concern: Concern) -> None:
        super().__init__(
            f"writing this file needs the user's permission: {_CONCERNS[concern]}",
            {"path": path, "reason": "needs_permission", "concern": concern},
        )
        self.path = path
        self.concern: Concern = concern


@dataclass(frozen=True)
class SandboxPath:
    """A path resolved inside a sandbox: ``root`` and the components below it.

    ``path`` is the path as the caller gave it (used in error data); ``resolved`` is the
    file the sandbox opens, reached from ``root`` without following links.
    """

    path: str
    root: Path
    parts: tuple[str, ...]

    @property
    def resolved(self) -> Path:
        return self.root.joinpath(*self.parts)


class Sandbox:
    """Reads and writes UTF-8 text files beneath ``roots``; see the module docstring.

    Roots must be absolute; each is resolved once (symlinks followed) when added.
    ``protected`` and ``confirm`` hold glob patterns (:mod:`fnmatch`) matched
    case-insensitively against every component of a write's resolved path below its
    root: a match of the first refuses the write, of the second needs the user's
    permission (``()`` for none). ``protect_git=False`` stops refusing writes into git's
    hooks folders and config files found through the repository's configuration.
    """

    def __init__(
        self,
        roots: Iterable[str | os.PathLike[str]],
        *,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        max_scan_bytes: int = DEFAULT_MAX_SCAN_BYTES,
        protected: Collection[str] = DEFAULT_PROTECTED_NAMES,
        confirm: Collection[str] = DEFAULT_CONFIRM_NAMES,
        protect_git: bool = True,
    ) -> None:
        if max_read_bytes < 0 or max_scan_bytes < 0:
            raise ValueError("max_read_bytes and max_scan_bytes must not be negative")
        if isinstance(protected, str) or isinstance(confirm, str):
            raise TypeError("protected and confirm are collections of patterns, not one string")
        self._roots: list[Path] = []
        self._max_read_bytes = max_read_bytes
        self._max_scan_bytes = max_scan_bytes
        self._protected = tuple(p.casefold() for p in protected)
        self._confirm = tuple(p.casefold() for p in confirm)
        self._protect_git = protect_git
        for root in roots:
            self.add_root(root)

    @property
    def roots(self) -> tuple[Path, ...]:
        """The resolved roots, in the order they were added."""
        return tuple(self._roots)

    @property
    def max_read_bytes(self) -> int:
        """Largest number of UTF-8 bytes one read may return."""
        return self._max_read_bytes

    @property
    def max_scan_bytes(self) -> int:
        """How far into a file a line read looks for its first line."""
        return self._max_scan_bytes

    @property
    def protected(self) -> tuple[str, ...]:
        """The protected patterns, casefolded."""
        return self._protected

    def add_root(self, path: str | os.PathLike[str]) -> Path:
        """Allow access below ``path`` (absolute) too; returns the resolved root."""
        raw = os.fspath(path)
        if not os.path.isabs(raw):
            raise ValueError(f"workspace root must be an absolute path: {raw!r}")
        root = Path(os.path.realpath(raw))
        if root not in self._roots:
            self._roots.append(root)
        return root

    # ------------------------------------------------------------------ resolving

    def contains(self, path: str) -> SandboxPath | None:
        """``path`` (absolute) resolved inside a root, or ``None`` when it lands outside all.

        Raises ``path_changed`` when a link on the way changes while it is being resolved.
        """
        try:
            real = Path(os.path.realpath(path))
        except OSError:  # readlink() failed on what lstat() had just seen as a link
            raise _path_changed(path) from None
        for root in self._roots:
            if real == root or real.is_relative_to(root):
                return SandboxPath(path, root, real.relative_to(root).parts)
        return None

    def locate(self, path: str) -> SandboxPath:
        """Check ``path`` and resolve it inside a root; ``outside_workspace`` otherwise.

        The answer is the same whether or not a path outside exists.
        """
        _check_path_argument(path)
        found = self.contains(path)
        if found is None:
            raise InvalidParams(
                "path is outside the workspace", {"path": path, "reason": "outside_workspace"}
            )
        return found

    def _target(self, target: str | SandboxPath) -> SandboxPath:
        if isinstance(target, str):
            return self.locate(target)
        if target.root not in self._roots:
            raise ValueError(f"{target.path!r} was located by another sandbox")
        return target

    def is_protected(self, target: SandboxPath) -> bool:
        """Whether a component of ``target`` below its root matches a protected pattern."""
        return _matches(target, self._protected)

    # ------------------------------------------------------------------ reading

    def read_text(
        self, target: str | SandboxPath, line: int | None = None, limit: int | None = None
    ) -> str:
        """The text of the file, or of lines ``line`` .. ``line + limit - 1`` (1-based).

        A range past the end of the file gives ``""``.
        """
        check_line_range(line, limit)
        target = self._target(target)
        path = target.path
        if not target.parts:
            raise _is_directory(path)
        parent = self._open_parent(target, create=False)
        try:
            name = target.parts[-1]
            try:
                fd = os.open(
                    name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC, dir_fd=parent
                )
            except OSError as exc:
                raise _link_error(exc, parent, name, target, writing=False) from None
        finally:
            os.close(parent)
        try:
            info = os.fstat(fd)
            _ensure_regular(info, path)
        except BaseException as exc:
            os.close(fd)
            if isinstance(exc, OSError):
                raise _map_os_error(exc, path, writing=False) from None
            raise
        with os.fdopen(fd, "rb") as f:
            try:
                whole = (line is None or line == 1) and limit is None
                if whole and info.st_size > self._max_read_bytes:
                    raise self._too_large(path, info.st_size)
                data = self._read_range(f, path, line, limit)
            except OSError as exc:
                raise _map_os_error(exc, path, writing=False) from None
        if data is None:
            raise self._too_large(path, info.st_size if whole else None)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidParams(
                "file is not UTF-8 text", {"path": path, "reason": "not_utf8"}
            ) from None

    def _read_range(
        self, f: BinaryIO, path: str, line: int | None, limit: int | None
    ) -> bytes | None:
        """:func:`_read_line_range` within this sandbox's bounds; ``None``: over ``max_read_bytes``."""
        try:
            return _read_line_range(f, line or 1, limit, self._max_read_bytes, self._max_scan_bytes)
        except _OutOfReach:
            raise InvalidParams(
                f"line {line} does not start within the first {self._max_scan_bytes} bytes "
                "of the file; lines that far into a file are not served",
                {
                    "path": path,
                    "reason": "line_out_of_reach",
                    "line": line,
                    "maxScanBytes": self._max_scan_bytes,
                },
            ) from None

    def read_buffer(
        self, target: SandboxPath, text: str, line: int | None = None, limit: int | None = None
    ) -> str:
        """The same range and size cap as :meth:`read_text`, on text already in memory.

        For a client's unsaved editor buffer of ``target``.
        """
        check_line_range(line, limit)
        encoded = BytesIO(text.encode("utf-8", "surrogatepass"))
        data = self._read_range(encoded, target.path, line, limit)
        if data is None:
            raise self._too_large(target.path, None)
        return data.decode("utf-8", "surrogatepass")

    def _too_large(self, path: str, size: int | None) -> InvalidParams:
        data: dict[str, object] = {
            "path": path,
            "reason": "too_large",
            "maxBytes": self._max_read_bytes,
        }
        if size is not None:
            data["size"] = size
        return InvalidParams(
            f"file is too large to read at once (more than {self._max_read_bytes} bytes); "
            "read part of it with line and limit",
            data,
        )

    # ------------------------------------------------------------------ writing

    def write_text(
        self, target: str | SandboxPath, content: str, *, confirmed: Collection[Concern] = ()
    ) -> None:
        """Write ``content`` as UTF-8, atomically, creating the file and missing folders.

        Raises :class:`NeedsPermission` for a write the user has to allow, unless its
        concern is in ``confirmed`` (pass it there once the user allowed it).
        """
        target = self._target(target)
        path = target.path
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidParams(
                "content is not valid Unicode text (unpaired surrogate)",
                {"path": path, "reason": "invalid_content"},
            ) from None
        if not target.parts:
            raise _is_directory(path)
        if self.is_protected(target):
            raise _protected(
                path,
                "version control internals, hook managers' files and "
                "folder scripts are never written",
            )
        if self._protect_git:
            why = git_guard(target.resolved)
            if why is not None:
                raise _protected(path, why)
        if "sensitive_file" not in confirmed and _matches(target, self._confirm):
            raise NeedsPermission(path, "sensitive_file")
        parent = self._open_parent(target, create=True)
        try:
            name = target.parts[-1]
            try:
                existing: os.stat_result | None = os.stat(
                    name, dir_fd=parent, follow_symlinks=False
                )
            except FileNotFoundError:
                existing = None
            except OSError as exc:
                raise _map_os_error(exc, path, writing=True) from None
            if existing is not None:
                if stat.S_ISLNK(existing.st_mode):
                    raise _unexpected_link(target, writing=True)
                _ensure_regular(existing, path)
                if existing.st_mode & _EXECUTE_BITS and "executable" not in confirmed:
                    raise NeedsPermission(path, "executable")
            try:
                _atomic_write(parent, name, data, existing)
            except OSError as exc:
                raise _map_os_error(exc, path, writing=True) from None
        finally:
            os.close(parent)

    # ------------------------------------------------------------------ the walk

    def _open_parent(self, target: SandboxPath, *, create: bool) -> int:
        """A descriptor of the folder holding the target, reached from its root without links."""
        try:
            fd = os.open(target.root, _DIR_FLAGS)
        except OSError as exc:
            raise _map_os_error(exc, target.path, writing=create) from None
        for name in target.parts[:-1]:
            fd = _descend(fd, name, target, create=create)
        return fd


def _descend(dir_fd: int, name: str, target: SandboxPath, *, create: bool) -> int:
    """Open folder ``name`` below ``dir_fd`` (closed here), creating it when asked."""
    try:
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if not create:
                raise
            # 0o777 lets the umask decide, as mkdir -p would.
            try:
                os.mkdir(name, 0o777, dir_fd=dir_fd)
            except FileExistsError:
                pass  # made meanwhile; opened (and checked) below
            return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise _link_error(exc, dir_fd, name, target, writing=create) from None
    finally:
        os.close(dir_fd)


def _link_error(
    exc: OSError, dir_fd: int, name: str, target: SandboxPath, *, writing: bool
) -> RequestError:
    """The error for a failed open: a link found where resolution saw none, or the OS error."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        try:
            is_link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except OSError:
            is_link = False
        if is_link:
            return _unexpected_link(target, writing=writing)
    return _map_os_error(exc, target.path, writing=writing)


def _unexpected_link(target: SandboxPath, *, writing: bool) -> RequestError:
    """A link met on the way: one that loops (resolution had to keep it), or one that appeared."""
    try:
        os.stat(target.resolved)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return _map_os_error(exc, target.path, writing=writing)
    return _path_changed(target.path)


def _matches(target: SandboxPath, patterns: tuple[str, ...]) -> bool:
    """Whether a component of ``target`` below its root matches one of ``patterns`` (casefolded)."""
    return any(
        fnmatch.fnmatchcase(part.casefold(), pattern)
        for part in target.parts
        for pattern in patterns
    )


def _protected(path: str, why: str) -> InvalidParams:
    return InvalidParams(f"path is protected: {why}", {"path": path, "reason": "protected_path"})


def _path_changed(path: str) -> InvalidParams:
    return InvalidParams(
        "path changed while it was opened (a folder or file became a symbolic link)",
        {"path": path, "reason": "path_changed"},
    )


def _is_directory(path: str) -> InvalidParams:
    return InvalidParams("path is a directory", {"path": path, "reason": "is_directory"})


def check_line_range(line: int | None, limit: int | None) -> None:
    """Refuse a ``line`` below 1 or a negative ``limit`` (lines are numbered from 1)."""
    if line is not None and line < 1:
        raise InvalidParams(
            "line must be 1 or greater (lines are numbered from 1)",
            {"line": line, "reason": "invalid_line"},
        )
    if limit is not None and limit < 0:
        raise InvalidParams(
            "limit must not be negative", {"limit": limit, "reason": "invalid_limit"}
        )


def _check_path_argument(path: object) -> None:
    if not isinstance(path, str) or not path:
        raise InvalidParams("path must be a non-empty string", {"reason": "invalid_path"})
    if "\x00" in path:
        raise InvalidParams("path contains a NUL character", {"reason": "invalid_path"})
    if not os.path.isabs(path):
        raise InvalidParams("path must be absolute", {"path": path, "reason": "relative_path"})


def _ensure_regular(info: os.stat_result, path: str) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise _is_directory(path)
    if not stat.S_ISREG(info.st_mode):
        raise InvalidParams(
            "path is not a regular file", {"path": path, "reason": "not_regular_file"}
        )


def _map_os_error(exc: OSError, path: str, *, writing: bool) -> RequestError:
    """Translate an OS error into a wire error without passing on its text."""
    code = exc.errno
    if code == errno.ENOENT or (code == errno.ENOTDIR and not writing):
        return ResourceNotFound("file not found", {"path": path})
    if code == errno.EISDIR:
        return _is_directory(path)
    if code in (errno.ENOTDIR, errno.EEXIST):
        return InvalidParams(
            "a parent of the path is not a directory",
            {"path": path, "reason": "parent_not_directory"},
        )
    if code == errno.ELOOP:
        return InvalidParams(
            "path has a symbolic link loop", {"path": path, "reason": "symlink_loop"}
        )
    if code in (errno.EACCES, errno.EPERM):
        return InternalError("permission denied", {"path": path, "reason": "permission_denied"})
    name = errno.errorcode.get(code, "unknown") if code is not None else "unknown"
    action = "write" if writing else "read"
    return InternalError(f"could not {action} file", {"path": path, "errno": name})


class _OutOfReach(Exception):
    """The first line of a range does not start within the scan bound."""


def _read_line_range(
    f: BinaryIO, line: int, limit: int | None, max_bytes: int, max_scan: int
) -> bytes | None:
    """Bytes of lines ``line`` .. ``line + limit - 1`` (1-based), streaming.

    ``None`` when the range is over ``max_bytes``; :class:`_OutOfReach` when ``line``
    does not start within the first ``max_scan`` bytes (and the file goes on). Newlines
    are counted a chunk at a time; only the chunk where a range starts or ends is walked
    line by line.
    """
    if limit == 0:
        return b""
    data = b""
    to_skip = line - 1
    scanned = 0
    while to_skip:
        if scanned >= max_scan:
            if not f.read(1):
                return b""
            raise _OutOfReach
        chunk = f.read(min(_CHUNK, max_scan - scanned))
        if not chunk:
            return b""
        scanned += len(chunk)
        count = chunk.count(b"\n")
        if count < to_skip:
            to_skip -= count
            continue
        data = chunk[_after_newlines(chunk, to_skip) :]
        to_skip = 0
    out = bytearray()
    remaining = limit
    while True:
        if remaining is not None:
            count = data.count(b"\n")
            if count >= remaining:
                out += data[: _after_newlines(data, remaining)]
                return bytes(out) if len(out) <= max_bytes else None
            remaining -= count
        out += data
        if len(out) > max_bytes:
            return None
        data = f.read(_CHUNK)
        if not data:
            return bytes(out)


def _after_newlines(data: bytes, count: int) -> int:
    """The offset just past the ``count``-th newline of ``data`` (which has that many)."""
    pos = 0
    for _ in range(count):
        pos = data.index(b"\n", pos) + 1
    return pos


def _atomic_write(dir_fd: int, name: str, data: bytes, existing: os.stat_result | None) -> None:
    """Write ``data`` to a temporary file in ``dir_fd`` and rename it over ``name`` there."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC | _O_NOFOLLOW
    while True:
        tmp = f".{name[:_TEMP_NAME_KEEP]}.{secrets.token_hex(6)}.tmp"
        try:
            # 0o666 lets the umask decide a new file's mode, as any editor would.
            fd = os.open(tmp, flags, 0o666 if existing is None else 0o600, dir_fd=dir_fd)
            break
        except FileExistsError:
            continue
    try:
        try:
            if existing is not None:
                os.fchmod(fd, stat.S_IMODE(existing.st_mode))
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
