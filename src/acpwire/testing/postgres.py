"""A throwaway PostgreSQL cluster for tests: ``initdb`` into a temp folder, run, delete.

The store tests (and the benchmarks) need a real PostgreSQL, not a mock of
one. :class:`PostgresCluster` finds the server binaries (``$ACPWIRE_PG_BIN``,
``PATH``, then the usual install folders such as
``/usr/lib/postgresql/<version>/bin``), creates a cluster in a fresh temp
folder and starts ``postgres`` on 127.0.0.1 and a free port, with its unix
socket inside that folder.

* **Unprivileged.** PostgreSQL refuses to run as root; when we are root the
  cluster is created and run as the ``postgres`` user (else ``nobody``), which
  owns the temp folder.
* **Locked.** Connections over TCP need the password generated for this
  cluster (SCRAM); the unix socket sits in a folder only the server's user
  can enter.
* **Fast, not durable.** ``fsync``, ``full_page_writes`` and
  ``synchronous_commit`` are off: a test cluster never survives a crash, and
  starting takes about a second. ``settings=`` overrides them (the benchmarks
  turn durability back on).
* **Never orphaned.** :meth:`PostgresCluster.stop` (also on ``with`` exit)
  stops the server (fast shutdown, then immediate, then SIGKILL) and deletes
  the folder. On Linux the server also gets SIGTERM if the process that
  started it dies without stopping it (``PR_SET_PDEATHSIG``; start it from the
  main thread, as pytest fixtures run).

Waiting is bounded: :meth:`PostgresCluster.start` waits for the server's
"ready to accept connections" line, at most ``startup_timeout`` seconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Final

__all__ = ["PG_BIN_ENV", "PostgresCluster", "find_postgres_bin"]

PG_BIN_ENV: Final = "ACPWIRE_PG_BIN"
"""Environment variable naming the folder of ``initdb`` and ``postgres``."""

_SEARCH_GLOBS: Final = (
    "/usr/lib/postgresql/*/bin",  # Debian, Ubuntu
    "/usr/pgsql-*/bin",  # RHEL, Fedora (PGDG)
    "/usr/local/pgsql/bin",  # built from source
    "/opt/homebrew/opt/postgresql@*/bin",  # macOS, Homebrew
    "/usr/local/opt/postgresql@*/bin",
)
_READY: Final = "database system is ready to accept connections"
_PR_SET_PDEATHSIG: Final = 1
_SETTINGS: Final = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "full_page_writes": "off",
    "synchronous_commit": "off",
    "wal_level": "minimal",
    "max_wal_senders": "0",
    "max_connections": "100",
    "shared_buffers": "64MB",
    "logging_collector": "off",
    "log_min_messages": "warning",
    "log_min_error_statement": "panic",
}


def _version_key(path: Path) -> tuple[int, ...]:
    digits = "".join(ch if ch.isdigit() else " " for ch in str(path))
    return tuple(int(d) for d in digits.split())


def find_postgres_bin() -> Path | None:
    """The folder holding ``initdb`` and ``postgres`` (newest version first), or None."""
    override = os.environ.get(PG_BIN_ENV)
    if override:
        return Path(override)
    on_path = shutil.which("initdb")
    if on_path is not None and shutil.which("postgres") is not None:
        return Path(on_path).resolve().parent
    for pattern in _SEARCH_GLOBS:
        found = sorted((Path(p) for p in glob.glob(pattern)), key=_version_key, reverse=True)
        for folder in found:
            if (folder / "initdb").is_file() and (folder / "postgres").is_file():
                return folder
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    """preexec_fn: SIGTERM when the parent dies (after the switch to the server's user)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class PostgresCluster:
    """A PostgreSQL server of its own in a temp folder (see the module docstring)."""

    def __init__(
        self,
        bin_dir: str | os.PathLike[str] | None = None,
        *,
        startup_timeout: float = 60.0,
        settings: Mapping[str, str] | None = None,
    ) -> None:
        found = Path(bin_dir) if bin_dir is not None else find_postgres_bin()
        if found is None or not (found / "initdb").is_file():
            raise FileNotFoundError(
                "PostgreSQL server binaries (initdb, postgres) not found; install the "
                f"postgresql package or set ${PG_BIN_ENV} to their folder"
            )
        self.bin_dir = found
        self.startup_timeout = startup_timeout
        self.settings = {**_SETTINGS, **(settings or {})}
        """Server settings (``-c name=value``); ``settings=`` overrides the fast defaults."""
        self.password = secrets.token_urlsafe(18)
        self.port = 0
        self.folder: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._drainer: threading.Thread | None = None
        self._log: deque[str] = deque(maxlen=200)
        self._user: str | None = None
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            self._user = _unprivileged_user()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The server's (postmaster's) process id while it runs: its backends are its
        children (benchmarks add up their CPU time)."""
        return self._process.pid if self.running and self._process is not None else None

    def dsn(self, database: str = "postgres") -> str:
        """A ``postgresql://`` URL for the superuser ``postgres`` over TCP."""
        if not self.port:
            raise RuntimeError("the cluster is not started")
        return f"postgresql://postgres:{self.password}@127.0.0.1:{self.port}/{database}"

    def log_tail(self) -> str:
        """The server's last log lines (for failure messages)."""
        return "\n".join(self._log)

    # -- starting and stopping ---------------------------------------------------

    def start(self) -> PostgresCluster:
        """Create the cluster and start the server; raises ``RuntimeError`` with its log if it fails."""
        if self._process is not None:
            raise RuntimeError("the cluster is already started")
        self.folder = Path(tempfile.mkdtemp(prefix="acpwire-pg-"))
        try:
            self._chown(self.folder)
            self._initdb()
            for attempt in range(3):  # another process may take the free port first
                if self._launch(_free_port()):
                    return self
                if "could not bind" not in self.log_tail() or attempt == 2:
                    break
            raise RuntimeError(f"PostgreSQL did not start:\n{self.log_tail()}")
        except BaseException:
            self.stop()
            raise

    def _chown(self, path: Path) -> None:
        if self._user is not None:
            shutil.chown(path, self._user)

    def _initdb(self) -> None:
        assert self.folder is not None
        pwfile = self.folder / "pw"
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(self.password + "\n")
        self._chown(pwfile)
        done = subprocess.run(
            [
                str(self.bin_dir / "initdb"),
                "-D",
                str(self.folder / "data"),
                "-U",
                "postgres",
                "--pwfile",
                str(pwfile),
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            ],
            cwd=self.folder,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=self.startup_timeout,
            check=False,
            user=self._user,
        )
        pwfile.unlink()
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed ({done.returncode}):\n{done.stderr[-4000:]}")

    def _launch(self, port: int) -> bool:
        """Start the server on ``port``; True once it accepts connections."""
        assert self.folder is not None
        args = [str(self.bin_dir / "postgres"), "-D", str(self.folder / "data"), "-p", str(port)]
        args += ["-c", f"unix_socket_directories={self.folder}"]
        for name, value in self.settings.items():
            args += ["-c", f"{name}={value}"]
        self._log.clear()
        process = subprocess.Popen(
            args,
            cwd=self.folder,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            user=self._user,
        )
        self._process = process
        ready = threading.Event()
        self._drainer = threading.Thread(
            target=self._drain, args=(process, ready), name="acpwire-postgres-log", daemon=True
        )
        self._drainer.start()
        ready.wait(self.startup_timeout)
        if process.poll() is None and _READY in self.log_tail():
            self.port = port
            return True
        self._terminate()
        return False

    def _drain(self, process: subprocess.Popen[bytes], ready: threading.Event) -> None:
        """Keep the server's stderr flowing (a full pipe would stall it) and spot readiness."""
        assert process.stderr is not None
        for raw in process.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            self._log.append(line)
            if _READY in line:
                ready.set()
        ready.set()  # the server exited

    def _terminate(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        # SIGINT: fast shutdown; SIGQUIT: immediate; then there is only SIGKILL.
        for sig, wait in ((signal.SIGINT, 15.0), (signal.SIGQUIT, 5.0), (signal.SIGKILL, 5.0)):
            if process.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(wait)
        drainer, self._drainer = self._drainer, None
        if drainer is not None:
            drainer.join(5.0)  # it ends at the server's end of stderr
        if process.stderr is not None:
            process.stderr.close()

    def stop(self) -> None:
        """Stop the server and delete the cluster's folder. Idempotent."""
        try:
            self._terminate()
        finally:
            self.port = 0
            folder, self.folder = self.folder, None
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _unprivileged_user() -> str:
    import pwd

    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists")
