"""The client's file-system sandbox behind ``fs/read_text_file`` and ``fs/write_text_file``.

Spec (file-system.mdx): both methods take an absolute ``path``; reading takes an
optional 1-based ``line`` and a maximum number of lines ``limit`` and answers
``{content}``; writing creates the file if it is missing (FS-003) and answers ``{}``.

SDK policy (not spec text), enforced by :class:`WorkspaceFiles`:

* Every path is resolved (symlinks followed, ``..`` applied) and must land inside one of
  the workspace roots, the session's ``cwd`` plus its additional directories. A path
  outside answers -32602 with ``data.reason == "outside_workspace"`` and is never opened.
* Text is UTF-8, decoded strictly: a file that is not UTF-8 is refused rather than
  returned with replacement characters. Line endings are returned as they are on disk;
  lines are counted by ``"\\n"`` (so ``"\\r\\n"`` lines count once, lone ``"\\r"`` does not
  end a line).
* Reads larger than ``max_read_bytes`` are refused (the agent can ask for a range with
  ``line``/``limit`` instead); ranged reads stream the file and never load it whole.
* Writes go to a temporary file in the target's folder and are moved into place with
  :func:`os.replace`, so readers never see a half-written file. An existing file keeps
  its permission bits; a symlink inside the workspace is written through (the link stays).

Errors are :mod:`acpwire.protocol.errors` classes carrying a small ``data`` dict
(``path`` as the agent sent it, and a ``reason``); OS error text is not passed on.

Residual race, by design of plain POSIX calls: a folder swapped for a symlink between
the check and the open is not detected. The final component is opened with
``O_NOFOLLOW`` where the platform has it.
"""

from __future__ import annotations

import asyncio
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from acpwire.protocol.errors import InternalError, InvalidParams, RequestError, ResourceNotFound

__all__ = ["DEFAULT_MAX_READ_BYTES", "BufferProvider", "WorkspaceFiles"]

DEFAULT_MAX_READ_BYTES = 32 * 1024 * 1024
"""Largest text :meth:`WorkspaceFiles.read_text` returns by default (32 MiB)."""

BufferProvider = Callable[[Path], str | None]
"""Serves unsaved editor buffers: given a resolved path, the buffer's text or ``None``."""

_CHUNK = 1 << 20
_O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)


class WorkspaceFiles:
    """Reads and writes UTF-8 text files confined to a set of workspace roots.

    ``cwd`` and ``additional_directories`` must be absolute; they are resolved once
    (symlinks followed) when added. ``buffer_provider`` is called on the event loop
    thread with the resolved path of an in-workspace read; when it returns a string,
    that string is the file's content (unsaved editor buffers win over the disk).
    """

    def __init__(
        self,
        cwd: str | os.PathLike[str],
        additional_directories: Iterable[str | os.PathLike[str]] = (),
        *,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        buffer_provider: BufferProvider | None = None,
    ) -> None:
        if max_read_bytes < 0:
            raise ValueError("max_read_bytes must not be negative")
        self._roots: list[Path] = []
        self._max_read_bytes = max_read_bytes
        self._buffer_provider = buffer_provider
        self.add_root(cwd)
        for directory in additional_directories:
            self.add_root(directory)

    @property
    def roots(self) -> tuple[Path, ...]:
        """The resolved workspace roots, ``cwd`` first."""
        return tuple(self._roots)

    @property
    def max_read_bytes(self) -> int:
        """Largest number of UTF-8 bytes one read may return."""
        return self._max_read_bytes

    def add_root(self, path: str | os.PathLike[str]) -> Path:
        """Allow access below ``path`` (absolute) too; returns the resolved root."""
        raw = os.fspath(path)
        if not os.path.isabs(raw):
            raise ValueError(f"workspace root must be an absolute path: {raw!r}")
        root = Path(os.path.realpath(raw))
        if root not in self._roots:
            self._roots.append(root)
        return root

    # ------------------------------------------------------------------ reading

    async def read_text(self, path: str, line: int | None = None, limit: int | None = None) -> str:
        """The text of the file at ``path``, or of lines ``line`` .. ``line + limit - 1``.

        ``line`` is 1-based (default 1), ``limit`` caps the number of lines (default: to
        the end). A range past the end of the file gives ``""``.
        """
        _check_path_argument(path)
        if line is not None and line < 1:
            raise InvalidParams(
                "line must be 1 or greater (lines are numbered from 1)",
                {"line": line, "reason": "invalid_line"},
            )
        if limit is not None and limit < 0:
            raise InvalidParams(
                "limit must not be negative", {"limit": limit, "reason": "invalid_limit"}
            )
        real = await asyncio.to_thread(os.path.realpath, path)
        self._ensure_inside(real, path)
        if self._buffer_provider is not None:
            buffered = self._buffer_provider(Path(real))
            if buffered is not None:
                text = _slice_lines(buffered, line, limit)
                if len(text.encode("utf-8", "surrogatepass")) > self._max_read_bytes:
                    raise self._too_large(path, None)
                return text
        return await asyncio.to_thread(self._read_sync, real, path, line, limit)

    def _read_sync(self, real: str, path: str, line: int | None, limit: int | None) -> str:
        try:
            fd = os.open(real, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
        except OSError as exc:
            raise _map_os_error(exc, path, writing=False) from None
        try:
            info = os.fstat(fd)
            _ensure_regular(info, path)
        except BaseException:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as f:
            try:
                whole = (line is None or line == 1) and limit is None
                if whole and info.st_size > self._max_read_bytes:
                    raise self._too_large(path, info.st_size)
                data = _read_line_range(f, line or 1, limit, self._max_read_bytes)
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

    async def write_text(self, path: str, content: str) -> None:
        """Write ``content`` as UTF-8 to ``path``, creating the file and missing folders."""
        _check_path_argument(path)
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidParams(
                "content is not valid Unicode text (unpaired surrogate)",
                {"path": path, "reason": "invalid_content"},
            ) from None
        await asyncio.to_thread(self._write_sync, path, data)

    def _write_sync(self, path: str, data: bytes) -> None:
        # realpath follows a symlink in the final component too (even a dangling one), so
        # a link pointing outside is refused here and one pointing inside is written through.
        real = os.path.realpath(path)
        self._ensure_inside(real, path)
        try:
            try:
                existing: os.stat_result | None = os.stat(real)
            except FileNotFoundError:
                existing = None
            if existing is not None:
                _ensure_regular(existing, path)
            parent = os.path.dirname(real)
            os.makedirs(parent, exist_ok=True)
            # The folders may have changed under us between the check and makedirs.
            self._ensure_inside(
                os.path.join(os.path.realpath(parent), os.path.basename(real)), path
            )
            _atomic_write(real, data, existing)
        except OSError as exc:
            raise _map_os_error(exc, path, writing=True) from None

    # ------------------------------------------------------------------ helpers

    def _ensure_inside(self, real: str, path: str) -> None:
        target = Path(real)
        if not any(target == root or target.is_relative_to(root) for root in self._roots):
            raise InvalidParams(
                "path is outside the workspace", {"path": path, "reason": "outside_workspace"}
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
        raise InvalidParams("path is a directory", {"path": path, "reason": "is_directory"})
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
        return InvalidParams("path is a directory", {"path": path, "reason": "is_directory"})
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


def _read_line_range(f: BinaryIO, line: int, limit: int | None, max_bytes: int) -> bytes | None:
    """Bytes of lines ``line`` .. ``line + limit - 1`` (1-based), streaming; None if over ``max_bytes``."""
    if limit == 0:
        return b""
    data = b""
    to_skip = line - 1
    while to_skip:
        chunk = f.read(_CHUNK)
        if not chunk:
            return b""
        count = chunk.count(b"\n")
        if count < to_skip:
            to_skip -= count
            continue
        pos = 0
        while to_skip:
            pos = chunk.index(b"\n", pos) + 1
            to_skip -= 1
        data = chunk[pos:]
    out = bytearray()
    remaining = limit
    while True:
        if remaining is not None:
            pos = 0
            while remaining:
                found = data.find(b"\n", pos)
                if found < 0:
                    break
                pos = found + 1
                remaining -= 1
            if not remaining:
                out += data[:pos]
                return bytes(out) if len(out) <= max_bytes else None
        out += data
        if len(out) > max_bytes:
            return None
        data = f.read(_CHUNK)
        if not data:
            return bytes(out)


def _slice_lines(text: str, line: int | None, limit: int | None) -> str:
    """The same range as :func:`_read_line_range`, on a string already in memory."""
    start = 0
    for _ in range((line or 1) - 1):
        found = text.find("\n", start)
        if found < 0:
            return ""
        start = found + 1
    if limit is None:
        return text[start:]
    end = start
    for _ in range(limit):
        found = text.find("\n", end)
        if found < 0:
            end = len(text)
            break
        end = found + 1
    return text[start:end]


def _atomic_write(real: str, data: bytes, existing: os.stat_result | None) -> None:
    folder, name = os.path.split(real)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_CLOEXEC | _O_NOFOLLOW
    while True:
        tmp = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            # 0o666 lets the umask decide a new file's mode, as any editor would.
            fd = os.open(tmp, flags, 0o666 if existing is None else 0o600)
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
        os.replace(tmp, real)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
