"""``async with`` for an owner of resources: :class:`AcloseOnExit`.

An owner that is not itself a link to a peer (a session store, the client's terminal
manager, an agent's MCP servers) is closed by ``aclose()`` (docs/concepts/closing.md),
and ``async with`` calls it on the way out, whatever the block ends with. Written once
here; an owner whose entry does work of its own overrides ``__aenter__`` alone, and a
link used the same way (an agent's terminal handle) makes ``aclose`` its ``close``.
"""

from __future__ import annotations

import sys
from abc import abstractmethod
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from typing import Self
    else:
        from typing_extensions import Self


class AcloseOnExit(Protocol):
    """``async with owner:`` enters as the owner itself and calls :meth:`aclose` on exit.

    A Protocol, so that a Protocol (the session store's) can build on it as well as a class.
    """

    @abstractmethod
    async def aclose(self) -> None:
        """Release everything the owner holds. Idempotent. (Abstract: a class that forgot
        it would otherwise inherit a Protocol's empty body and close nothing.)"""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
