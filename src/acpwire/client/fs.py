"""The client's file-system methods ``fs/read_text_file`` and ``fs/write_text_file``.

Spec (file-system.mdx): both methods take an absolute ``path``; reading takes an
optional 1-based ``line`` and a maximum number of lines ``limit`` and answers
``{content}``; writing creates the file if it is missing (FS-003) and answers ``{}``.

SDK policy (not spec text): :class:`WorkspaceFiles` serves them from a
:class:`acpwire.sandbox.Sandbox` whose roots are the session's ``cwd`` plus its
additional directories. The sandbox's module docstring says what it enforces: paths
confined to the roots even while folders are swapped for symlinks, regular UTF-8 files
only, reads capped at ``max_read_bytes`` and line reads at ``max_scan_bytes``, atomic
writes that never make a file executable, version control internals, git hooks and
folder scripts never written, ``.env`` and executable files written only with the
user's permission (:class:`~acpwire.sandbox.NeedsPermission`; the toolkit client asks its
permission policy). Here it gains what only a client has: unsaved editor buffers, served
instead of the disk when a ``buffer_provider`` knows the file.

Errors are :mod:`acpwire.protocol.errors` classes carrying a small ``data`` dict
(``path`` as the agent sent it, and a ``reason``); OS error text is not passed on.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from ..protocol.errors import InvalidParams
from ..sandbox import (
    DEFAULT_CONFIRM_NAMES,
    DEFAULT_MAX_READ_BYTES,
    DEFAULT_MAX_SCAN_BYTES,
    DEFAULT_PROTECTED_NAMES,
    Concern,
    Sandbox,
    SandboxPath,
    check_line_range,
)

__all__ = ["DEFAULT_MAX_READ_BYTES", "BufferProvider", "WorkspaceFiles"]

BufferProvider = Callable[[Path], str | None]
"""Serves unsaved editor buffers: given a resolved path, the buffer's text or ``None``."""


class WorkspaceFiles:
    """Reads and writes UTF-8 text files confined to a set of workspace roots.

    ``cwd`` and ``additional_directories`` must be absolute; they are resolved once
    (symlinks followed) when added. ``buffer_provider`` is called on the event loop
    thread with the resolved path of an in-workspace read; when it returns a string,
    that string is the file's content (unsaved editor buffers win over the disk).
    ``protected`` lists glob patterns of path components never written, ``confirm`` those
    written only with the user's permission, ``protect_git`` guards git's hooks folders
    and config files (see :class:`~acpwire.sandbox.Sandbox`).
    """

    def __init__(
        self,
        cwd: str | os.PathLike[str],
        additional_directories: Iterable[str | os.PathLike[str]] = (),
        *,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        max_scan_bytes: int = DEFAULT_MAX_SCAN_BYTES,
        buffer_provider: BufferProvider | None = None,
        protected: Collection[str] = DEFAULT_PROTECTED_NAMES,
        confirm: Collection[str] = DEFAULT_CONFIRM_NAMES,
        protect_git: bool = True,
    ) -> None:
        self.sandbox = Sandbox(
            [cwd, *additional_directories],
            max_read_bytes=max_read_bytes,
            max_scan_bytes=max_scan_bytes,
            protected=protected,
            confirm=confirm,
            protect_git=protect_git,
        )
        self._buffer_provider = buffer_provider

    @property
    def roots(self) -> tuple[Path, ...]:
        """The resolved workspace roots, ``cwd`` first."""
        return self.sandbox.roots

    @property
    def max_read_bytes(self) -> int:
        """Largest number of UTF-8 bytes one read may return."""
        return self.sandbox.max_read_bytes

    def add_root(self, path: str | os.PathLike[str]) -> Path:
        """Allow access below ``path`` (absolute) too; returns the resolved root."""
        return self.sandbox.add_root(path)

    async def terminal_cwd(self, cwd: str) -> SandboxPath:
        """The folder a terminal may start in: ``cwd`` if absolute and inside the roots
        (-32602 ``relative_cwd`` or ``cwd_outside_workspace`` otherwise)."""
        if "\x00" in cwd or not os.path.isabs(cwd):
            raise InvalidParams(
                "cwd must be an absolute path", {"cwd": cwd, "reason": "relative_cwd"}
            )
        inside = await asyncio.to_thread(self.sandbox.contains, cwd)
        if inside is None:
            raise InvalidParams(
                "cwd is outside the session's workspace roots",
                {"cwd": cwd, "reason": "cwd_outside_workspace"},
            )
        return inside

    async def locate(self, path: str) -> SandboxPath:
        """Resolve ``path`` inside the workspace (-32602 ``outside_workspace`` otherwise).

        Pass the result to :meth:`read_text` / :meth:`write_text` to act on exactly the
        file a policy looked at.
        """
        return await asyncio.to_thread(self.sandbox.locate, path)

    async def read_text(
        self, path: str | SandboxPath, line: int | None = None, limit: int | None = None
    ) -> str:
        """The text of the file at ``path``, or of lines ``line`` .. ``line + limit - 1``.

        ``line`` is 1-based (default 1), ``limit`` caps the number of lines (default: to
        the end). A range past the end of the file gives ``""``.
        """
        check_line_range(line, limit)
        target = await self.locate(path) if isinstance(path, str) else path
        if self._buffer_provider is not None:
            buffered = self._buffer_provider(target.resolved)
            if buffered is not None:
                return self.sandbox.read_buffer(target, buffered, line, limit)
        return await asyncio.to_thread(self.sandbox.read_text, target, line, limit)

    async def write_text(
        self, path: str | SandboxPath, content: str, *, confirmed: Collection[Concern] = ()
    ) -> None:
        """Write ``content`` as UTF-8 to ``path``, creating the file and missing folders.

        :class:`~acpwire.sandbox.NeedsPermission` unless the concern it names is ``confirmed``.
        """
        await asyncio.to_thread(self.sandbox.write_text, path, content, confirmed=confirmed)
