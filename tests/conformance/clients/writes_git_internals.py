"""Defect: writes into .git/ (SANDBOX-007)."""

from __future__ import annotations

from _client import Client, main

FAILS = {"fs-vcs-internals": ("SANDBOX-007",)}


class Broken(Client):
    protected = ()


if __name__ == "__main__":
    main(Broken)
