"""The built-in demo agent (``python -m acpwire.demo``, ``acp demo-agent``); see docs/demo.md."""

from .agent import APP_NAME, COMMANDS, build_app, default_store_path, main

__all__ = ["APP_NAME", "COMMANDS", "build_app", "default_store_path", "main"]
