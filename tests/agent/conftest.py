"""Apps served in a test are closed when it ends (their SQLite stores included)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from _app_harness import OPEN_APPS


@pytest.fixture(autouse=True)
async def _close_served_apps() -> AsyncIterator[None]:
    yield
    while OPEN_APPS:
        await OPEN_APPS.pop().aclose()
