"""The corpus's correct base agent (``../broken/_agent.py``), for the agents in this folder."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "broken"))

from _agent import Agent, RpcError, Session, main

__all__ = ["Agent", "RpcError", "Session", "main"]
