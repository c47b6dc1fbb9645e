"""The guard of one terminal's process tree: a small program the client runs per terminal (Linux).

:mod:`acpwire.client.terminals` starts it as ``python -I -S _supervisor.py`` instead of the
command itself; it is never imported by the client. It uses the standard library only, and
not ``json``, ``subprocess`` or ``re``: every terminal waits for its start (tens of
milliseconds, most of it the interpreter's own). Rules:

* **Nothing leaves the tree.** The working process (below: the guard) makes itself a child
  subreaper (``PR_SET_CHILD_SUBREAPER``) before it starts the command. Whatever the command
  does to leave (``setsid``, ``nohup``, a double fork, any mix), an orphan of the tree is
  re-parented to the guard, not to init, so every process the command started stays a
  descendant of the guard and is found by walking ``/proc`` down from it.
* **Killing cannot be outrun.** To kill, the guard sends SIGKILL to every descendant and walks
  again until a walk finds nothing new: the kernel does not let a fork complete once SIGKILL
  is pending for the forking process. Then it reaps until it has no child left, so no zombie
  of the tree stays behind either.
* **It ends with the client.** The guard stops the tree when its standard input reaches its
  end: the client closed it, or the client process ended in any way, SIGKILL included. The
  client's asyncio transport kills the process it started with SIGKILL when it is closed or
  garbage collected before it exited; so the process the client starts only forks the guard
  and waits for it, and the guard asks for SIGHUP when that waiting process dies
  (``PR_SET_PDEATHSIG``), which also stops the tree.
* **The command runs as before** (as ``subprocess.Popen`` would run it): its own session,
  standard input ``/dev/null``, standard error onto standard output (the client's output
  pipe), the environment and ``PATH`` search of the given environment, SIGPIPE and SIGXFSZ
  back to their defaults. The guard lets go of the output pipe, so the pipe ends when the
  tree has no more writers.

Wire. Client to guard, on standard input: ``<length>\\n`` and a NUL-separated spec (argument
count, the arguments, then ``NAME=VALUE`` entries), then single bytes: ``t`` sends SIGTERM to
every descendant, ``k`` kills the tree and ends the guard. Guard to client, on standard error,
lines: ``pid N`` once the command runs, ``error ERRNO`` if it could not be started,
``unsupported ERRNO`` if the kernel refused to make it a subreaper (nothing was started),
``exit RC`` when it ends (RC as ``Popen.returncode``: minus the signal number if killed).
The end of standard error means the guard is gone, and with it every process of the tree
(unless the guard itself was killed). The guard also ends by itself once the command has
exited and no descendant is left.
"""

from __future__ import annotations

import os
import select
import signal
import sys

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36

_STOPPING = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)
"""Signals that make the guard kill the tree and end (SIGHUP: the waiting parent died)."""

_HANDLED = (*_STOPPING, signal.SIGCHLD)
"""Signals the guard handles, given back to the command as the guard found them."""

_stop_requested = False


def main() -> None:
    parent = os.getpid()
    guard = os.fork()
    if guard:
        # The process the client started: only wait, so that the client's SIGKILL (or anyone's)
        # reaches this one and the guard hears of it through its parent-death signal.
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.waitpid(guard, 0)
        os._exit(0)
    try:
        _guard(parent)
    except BaseException:
        sys.excepthook(*sys.exc_info())  # to the client, which logs what it cannot parse
        try:
            _kill_tree()  # never leave a tree without its guard
            _reap(0, block=True)
        finally:
            os._exit(1)
    os._exit(0)


def _guard(parent: int) -> None:
    try:
        import ctypes
    except ImportError:  # a Python built without it
        _report(b"unsupported 0")
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        _report(b"unsupported %d" % ctypes.get_errno())  # the client runs it unguarded
        return
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGHUP, 0, 0, 0)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    ignored = {sig for sig in _HANDLED if signal.getsignal(sig) == signal.SIG_IGN}
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # only to be woken up
    for sig in _STOPPING:
        signal.signal(sig, _request_stop)
    if os.getppid() != parent:  # it died before the parent-death signal was asked for
        return
    spec, pending = _read_spec()
    if spec is None or _stop_requested:  # the client is gone before it said what to run
        return
    argv, env = spec
    command = _spawn(argv, env, ignored)
    if command is None:
        return
    _report(b"pid %d" % command)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # the output pipe belongs to the tree alone
    os.close(null)
    _serve(command, pending, wake_r)


def _request_stop(signum: int, frame: object) -> None:
    global _stop_requested
    _stop_requested = True


def _report(line: bytes) -> None:
    try:
        os.write(2, line + b"\n")
    except OSError:  # the client is gone; the tree is stopped all the same
        pass


def _read_spec() -> tuple[tuple[list[bytes], dict[bytes, bytes]] | None, bytes]:
    """The command and environment from standard input, and any control bytes read past it."""
    data = b""
    while b"\n" not in data or len(data) < data.index(b"\n") + 1 + int(data.split(b"\n")[0]):
        chunk = os.read(0, 65536)
        if not chunk:
            return None, b""
        data += chunk
    header, rest = data.split(b"\n", 1)
    size = int(header)
    fields = rest[:size].split(b"\0")
    count = int(fields[0])
    argv = fields[1 : 1 + count]
    env = dict(entry.split(b"=", 1) for entry in fields[1 + count :])
    return (argv, env), rest[size:]


def _spawn(argv: list[bytes], env: dict[bytes, bytes], ignored: set[signal.Signals]) -> int | None:
    """Start the command; its pid, or ``None`` once the error is reported."""
    error_r, error_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child execs or exits
        code = b"0"
        try:
            os.close(error_r)
            os.setsid()
            stdin = os.open(os.devnull, os.O_RDONLY)
            os.dup2(stdin, 0)
            os.dup2(1, 2)
            signal.set_wakeup_fd(-1)
            for sig in _HANDLED:  # as the client had them (exec resets only handled ones)
                signal.signal(sig, signal.SIG_IGN if sig in ignored else signal.SIG_DFL)
            for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores these; Popen resets them
                signal.signal(sig, signal.SIG_DFL)
            os.execvpe(argv[0], argv, env)
        except OSError as exc:
            code = str(exc.errno or 0).encode()
        finally:
            os.write(error_w, code)
            os._exit(127)
    os.close(error_w)
    error = b""
    while chunk := os.read(error_r, 64):
        error += chunk
    os.close(error_r)
    if error:  # the child could not exec: nothing else runs
        os.waitpid(pid, 0)
        _report(b"error " + error)
        return None
    return pid


def _serve(command: int, pending: bytes, wake_r: int) -> None:
    """Reap and report until the tree is empty; stop it when told to or when the client leaves."""
    command_running = True
    control = pending
    while True:
        if b"k" in control or _stop_requested:
            _kill_tree()
            _reap(command if command_running else 0, block=True)
            return
        if b"t" in control:
            for pid in _descendants():
                _signal(pid, signal.SIGTERM)
        control = b""
        if command_running and _reap(command, block=False):
            command_running = False
        if not command_running and not _has_children():
            return
        ready, _, _ = select.select([0, wake_r], [], [])
        if wake_r in ready:
            while True:
                try:
                    if not os.read(wake_r, 4096):
                        break
                except BlockingIOError:
                    break
        if 0 in ready:
            control = os.read(0, 4096) or b"k"  # the end of input: the client is gone


def _reap(command: int, *, block: bool) -> bool:
    """Reap exited children (all of them, waiting, if ``block``); True once ``command`` was."""
    reaped = False
    while True:
        try:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        if pid == command:
            _report(b"exit %d" % os.waitstatus_to_exitcode(status))
            reaped = True


def _has_children() -> bool:
    try:
        with open(f"/proc/self/task/{os.getpid()}/children", "rb") as listing:
            return bool(listing.read().split())
    except OSError:  # no CONFIG_PROC_CHILDREN: walk /proc instead
        return bool(_descendants())


def _kill_tree() -> None:
    """SIGKILL every descendant, walking again until a walk finds no new one.

    A process with SIGKILL pending cannot complete a fork, so a new process can only come
    from one no walk has found yet; an orphan is re-parented to the guard, where the next
    walk finds it.
    """
    killed: set[int] = set()
    while new := [pid for pid in _descendants() if pid not in killed]:
        for pid in new:
            _signal(pid, signal.SIGKILL)
        killed.update(new)


def _descendants() -> list[int]:
    """Every process below the guard, found through the parent ids in ``/proc``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                ppid = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
        children.setdefault(ppid, []).append(int(entry))
    found: list[int] = []
    todo = [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):  # gone, or set-user-ID: out of reach
        pass


if __name__ == "__main__":
    if not sys.platform.startswith("linux"):
        sys.exit("the terminal supervisor runs on Linux only")
    main()
