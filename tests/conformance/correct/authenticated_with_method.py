"""Allowed: the agent of ``needs_authentication.py``, checked with ``--auth-method token``:
it authenticates, then passes."""

from __future__ import annotations

from _base import main
from needs_authentication import Correct

FAILS: dict[str, tuple[str, ...]] = {}
OPTIONS = {"auth_method": "token"}

if __name__ == "__main__":
    main(Correct)
