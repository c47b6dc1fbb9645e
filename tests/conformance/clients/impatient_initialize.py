"""Defect: gives up on initialize after 1.5 s (CLIENT-007)."""

from __future__ import annotations

from _client import Client, main

FAILS = {"slow-initialize": ("CLIENT-007",)}


class Broken(Client):
    initialize_timeout = 1.5


if __name__ == "__main__":
    main(Broken)
