"""The web client in a real browser: Debian's ``chromium`` driven by Playwright.

Playwright's own browser downloads are not used (nor reachable where the tests run):
the tests launch the system's ``chromium`` (``apt-get install -y chromium``, which
``.ci/run`` does when it is missing) with ``executable_path``. Where either is
missing the tests skip and say which. Each test writes screenshots of the states it
reaches to :data:`SCREENSHOTS` (git-ignored) so that a person can look at them.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
"""Where the tests leave a picture of each state (README.md names it)."""


def find_chromium() -> str | None:
    """The system's Chromium: ``$ACPWIRE_CHROMIUM``, else ``chromium`` on PATH."""
    named = os.environ.get("ACPWIRE_CHROMIUM")
    if named:
        return named
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    """A headless Chromium, one per test."""
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install playwright; bin/test's venv has it)")
    chromium = find_chromium()
    if chromium is None:
        pytest.skip(
            "no chromium on PATH: apt-get install -y chromium (.ci/run does), "
            "or set ACPWIRE_CHROMIUM to a Chromium binary"
        )
    SCREENSHOTS.mkdir(exist_ok=True)
    async with async_playwright() as playwright:
        # --no-sandbox: the sandbox needs user namespaces, which containers (and root)
        # often lack; the page is our own, served on loopback.
        launched = await playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            await launched.close()
