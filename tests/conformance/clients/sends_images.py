"""Defect: puts an image in its prompt to an agent without promptCapabilities.image (PROMPT-002)."""

from __future__ import annotations

from typing import Any

from _client import Client, main

FAILS = {"client-prompt-content": ("PROMPT-002",)}


class Broken(Client):
    def prompt_params(self) -> dict[str, Any]:
        params = super().prompt_params()
        params["prompt"].append({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="})
        return params


if __name__ == "__main__":
    main(Broken)
