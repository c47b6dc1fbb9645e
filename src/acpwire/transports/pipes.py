"""Kernel pipe capacity for the direction that carries a stream (Linux).

A Linux pipe holds 64 KiB by default: about 300 ``session/update`` lines, half
a millisecond of the reading side's work. A writer that runs ahead (acpwire's
transport hands a burst over in writes of up to 64 KiB, and keeps writing into
its own buffer while the pipe is full) then leaves the reader idle until its
event loop next gets to the pipe: writer and reader take turns instead of
running at once. Measured in ``benchmarks/bench_high_tier.py``'s setting, the
reading client sat idle in ``epoll_wait`` for a third of a stream, and the
low tier streamed at 0.62-0.66x the raw pair; with 1 MiB, idle 1-5 % and
0.87-0.88x (runs alternating in one process).

The pipe's pages are only allocated while they hold data, and what a writer may
leave unsent stays bounded (the transport's high-water mark plus this
capacity). A user's pipes share a budget (``/proc/sys/fs/pipe-user-pages-soft``,
64 MiB by default) that a widened pipe draws 1 MiB from while it is open. The
kernel refuses sizes above ``/proc/sys/fs/pipe-max-size`` (1 MiB by default)
and growth past that budget: the pipe then stays as it was. Elsewhere than
Linux this does nothing."""

from __future__ import annotations

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

STREAM_PIPE_SIZE = 1024 * 1024
"""Capacity asked for a pipe that carries a stream (bytes; the kernel's default maximum)."""

_SET_PIPE_SIZE: int | None = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only


def widen_pipe(fd: int, size: int = STREAM_PIPE_SIZE) -> bool:
    """Ask the kernel for ``size`` bytes of capacity on the pipe ``fd`` (either end).

    True when the pipe now holds at least that much; False, changing nothing, for
    a descriptor that is not a pipe, a platform without the call, or a refusal.
    """
    if _SET_PIPE_SIZE is None or fcntl is None:
        return False
    try:
        return fcntl.fcntl(fd, _SET_PIPE_SIZE, size) >= size
    except OSError:  # not a pipe (EBADF/EINVAL), over the limits (EPERM), or busy
        return False
