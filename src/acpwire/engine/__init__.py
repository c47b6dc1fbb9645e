"""The asyncio runtime shared by both roles (see :mod:`.connection`)."""

from .connection import Connection, Route, Router

__all__ = ["Connection", "Route", "Router"]
