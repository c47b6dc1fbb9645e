"""A command run on a real pseudo-terminal, as a person runs it: stdin, stdout and stderr
are the terminal, so what the tests read is every byte the terminal would obey."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import threading
from collections.abc import Sequence

from waiting import TIMEOUT

KEYS = {"escape": b"\x1b", "enter": b"\r", "f1": b"\x1bOP", "f2": b"\x1bOQ", "ctrl+q": b"\x11"}


class PtyTerminal:
    """``argv`` on a pseudo-terminal of ``columns`` x ``rows`` (``TERM=xterm-256color``)."""

    def __init__(
        self,
        argv: Sequence[str],
        env: dict[str, str],
        *,
        columns: int = 120,
        rows: int = 40,
    ) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.master = master
        self.process = subprocess.Popen(
            list(argv),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**env, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows)},
            start_new_session=True,  # the terminal becomes the command's controlling tty
        )
        os.close(slave)
        self.raw = b""
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: every process of the terminal is gone
                data = b""
            with self._changed:
                self.raw += data
                self._changed.notify_all()
            if not data:
                return

    @property
    def output(self) -> str:
        """Everything written to the terminal so far."""
        with self._changed:
            return self.raw.decode("utf-8", "replace")

    def text(self) -> str:
        """The output without colours (SGR), for looking for words."""
        return re.sub(r"\x1b\[[0-9;:]*m", "", self.output)

    def wait_for(self, text: str) -> None:
        """Wait until ``text`` was shown (colours aside); bounded."""
        with self._changed:
            ok = self._changed.wait_for(lambda: text in self.text(), TIMEOUT)
        assert ok, f"never saw {text!r} on the terminal:\n{self.text()[-3000:]}"

    def type(self, data: str | bytes) -> None:
        os.write(self.master, data.encode() if isinstance(data, str) else data)

    def press(self, key: str) -> None:
        self.type(KEYS[key])

    def exit_code(self) -> int:
        code = self.process.wait(TIMEOUT)
        self._reader.join(TIMEOUT)
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(TIMEOUT)
        self._reader.join(TIMEOUT)
        if not self._reader.is_alive():  # closed under a live reader, the fd could be reused
            os.close(self.master)
