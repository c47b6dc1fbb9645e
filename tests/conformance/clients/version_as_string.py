"""Defect: asks for protocol version "1", a string (INIT-007)."""

from __future__ import annotations

from _client import Client, main

FAILS = {"client-initialize": ("INIT-007",)}


class Broken(Client):
    protocol_version = "1"


if __name__ == "__main__":
    main(Broken)
