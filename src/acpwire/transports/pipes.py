"""Pipes tuned for ACP's traffic: a wide pipe for a stream, and reads sized for the heap.

**Capacity (Linux).**

A Linux pipe holds 64 KiB by default: about 300 ``session/update`` lines, half
a millisecond of the reading side's work. A writer that runs ahead (acpwire's
transport hands a burst over in writes of up to 64 KiB, and keeps writing into
its own buffer while the pipe is full) then leaves the reader idle until its
event loop next gets to the pipe: writer and reader take turns instead of
running at once. Measured in ``benchmarks/bench_high_tier.py``'s setting, the
reading client sat idle in ``epoll_wait`` for a third of a stream, and the
low tier streamed at 0.62-0.66x the raw pair; with 1 MiB, idle 1-8 % and
0.87-0.88x (runs alternating in one process).

The pipe's pages are only allocated while they hold data, and what a writer may
leave unsent stays bounded (the transport's high-water mark plus this
capacity). A user's pipes share a budget (``/proc/sys/fs/pipe-user-pages-soft``,
64 MiB by default) that a widened pipe draws 1 MiB from while it is open. The
kernel refuses sizes above ``/proc/sys/fs/pipe-max-size`` (1 MiB by default)
and growth past that budget: the pipe then stays as it was. Elsewhere than
Linux this does nothing.

**Read size.** asyncio reads a pipe up to 256 KiB at a time into a new bytes
object. That is above glibc's threshold for serving an allocation from the heap
(128 KiB), so each read of even one small message maps fresh memory, faults a
page in, remaps it to the size read and unmaps it: three system calls and a
page fault per message received. Reading at most 64 KiB keeps the buffer on the
heap; in alternating ping round trips the agent's CPU per request fell by
15-40 µs and its round trip from 1.33-1.55x the raw pair's to 1.08-1.33x."""

from __future__ import annotations

import asyncio

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

STREAM_PIPE_SIZE = 1024 * 1024
"""Capacity asked for a pipe that carries a stream (bytes; the kernel's default maximum)."""

READ_SIZE = 64 * 1024
"""Most bytes read from a pipe at once: under glibc's mmap threshold (see above)."""

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


def read_heap_sized(transport: asyncio.BaseTransport) -> None:
    """Make an asyncio read pipe transport read at most :data:`READ_SIZE` bytes at once.

    The size is an attribute of asyncio's own pipe transport (``max_size``, not part
    of its documented API); other event loops' transports are left alone.
    """
    if isinstance(getattr(transport, "max_size", None), int):
        transport.max_size = READ_SIZE  # type: ignore[attr-defined]
