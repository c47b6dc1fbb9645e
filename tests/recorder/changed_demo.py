"""The demo agent changed in one place: the ``read`` command's description says "Load"."""

from __future__ import annotations

import dataclasses

import acpwire.demo.agent as demo

demo.COMMANDS = tuple(
    dataclasses.replace(c, description=c.description.replace("Read", "Load")) for c in demo.COMMANDS
)

if __name__ == "__main__":
    demo.main()
