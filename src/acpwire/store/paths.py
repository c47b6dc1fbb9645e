"""Where acpwire keeps files by default: the per-user data folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

__all__ = ["DATA_DIR_ENV", "default_data_dir", "default_store_path"]

DATA_DIR_ENV: Final = "ACPWIRE_DATA_DIR"
"""Environment variable that overrides the folder of the default store file."""

_DEFAULT_FILE_NAME: Final = "sessions.sqlite3"
_APP_DIR_NAME: Final = "acpwire"


def default_data_dir() -> Path:
    """The per-user folder acpwire keeps data in.

    ``$ACPWIRE_DATA_DIR`` if set; otherwise ``%LOCALAPPDATA%\\acpwire`` on
    Windows, ``~/Library/Application Support/acpwire`` on macOS and
    ``$XDG_DATA_HOME/acpwire`` (default ``~/.local/share/acpwire``) elsewhere.
    The folder is not created here.
    """
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override).expanduser()
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        base = Path(local) if local else Path.home() / "AppData" / "Local"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        xdg = os.environ.get("XDG_DATA_HOME")
        # The XDG spec says relative values are invalid and must be ignored.
        base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / _APP_DIR_NAME


def default_store_path() -> Path:
    """The file :class:`~acpwire.store.SqliteSessionStore` uses when given no path."""
    return default_data_dir() / _DEFAULT_FILE_NAME
