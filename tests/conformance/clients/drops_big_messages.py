"""Defect: drops messages over 256 KiB, so a big permission request is never answered (CLIENT-004)."""

from __future__ import annotations

from _client import Client, main

FAILS = {"huge-message": ("CLIENT-004",)}


class Broken(Client):
    max_line = 256 * 1024


if __name__ == "__main__":
    main(Broken)
