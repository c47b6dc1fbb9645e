"""A stdio ACP agent that reads leniently, as many real agents do, for the admission tests.

Usage: ``python lenient_agent.py STATE_DIR``. Every process started on the same
STATE_DIR shares its sessions (``STATE_DIR/sessions/*.json``, kept across
connections, as an agent with sessions on disk does), and appends each line it
reads to ``STATE_DIR/received-PID.jsonl`` (as a JSON string), so a test can check
what reached an agent at all.

How it reads, each a way real parsers differ from the endpoint's:

* Python's ``json`` with its defaults: ``NaN``, ``Infinity``, ``1e400`` and lone
  surrogate escapes are accepted;
* stdin in text mode with universal newlines: ``\\r`` ends a line as ``\\n`` does;
* the first of two members with the same name wins (as some parsers do);
* a JSON array is a batch: each element is served as a message of its own.

It knows nothing of principals: it serves ``session/list``, ``session/load`` (which
replays the session's prompts as ``agent_message_chunk`` updates),
``session/prompt`` (which records the prompt) and ``session/delete`` for any session
id it is given; an unknown session is an invalid parameter (-32602) to it, and
deleting one succeeds.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any


def first_wins(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        found.setdefault(key, value)
    return found


class Agent:
    def __init__(self, state: Path) -> None:
        self.sessions = state / "sessions"
        self.sessions.mkdir(parents=True, exist_ok=True)
        self.received = state / f"received-{os.getpid()}.jsonl"

    def write(self, message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def answer(self, request_id: Any, result: Any) -> None:
        self.write({"jsonrpc": "2.0", "id": request_id, "result": result})

    def fail(self, request_id: Any, code: int, text: str) -> None:
        self.write({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}})

    def say(self, session_id: str, text: str) -> None:
        update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
        params = {"sessionId": session_id, "update": update}
        self.write({"jsonrpc": "2.0", "method": "session/update", "params": params})

    def line(self, line: str) -> None:
        with self.received.open("a") as log:
            log.write(json.dumps(line) + "\n")
        try:
            message = json.loads(line, object_pairs_hook=first_wins)
        except (ValueError, RecursionError):
            self.fail(None, -32700, "parse error")
            return
        for one in message if isinstance(message, list) else [message]:
            if isinstance(one, dict):
                self.serve(one)

    def serve(self, message: dict[str, Any]) -> None:
        method, rid = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method is None:
            return  # an answer to nothing this agent asked
        if method == "initialize":
            sessions = {"list": {}, "delete": {}}
            capabilities = {"loadSession": True, "sessionCapabilities": sessions}
            self.answer(rid, {"protocolVersion": 1, "agentCapabilities": capabilities})
        elif method == "session/new":
            sid = "kept-" + secrets.token_hex(8)
            self.save(sid, {"cwd": params.get("cwd", "/"), "prompts": []})
            self.answer(rid, {"sessionId": sid})
        elif method == "session/list":
            listed = [
                {"sessionId": path.stem, "cwd": json.loads(path.read_text())["cwd"]}
                for path in sorted(self.sessions.glob("*.json"))
            ]
            self.answer(rid, {"sessions": listed})
        elif method == "session/delete":
            (self.sessions / f"{params.get('sessionId')}.json").unlink(missing_ok=True)
            self.answer(rid, {})  # deleting a missing session succeeds
        elif method in ("session/load", "session/prompt"):
            sid = str(params.get("sessionId"))
            path = self.sessions / f"{sid}.json"
            if not path.is_file():
                self.fail(rid, -32602, f"unknown session {sid}")
                return
            session = json.loads(path.read_text())
            if method == "session/load":
                for text in session["prompts"]:
                    self.say(sid, text)
                self.answer(rid, {})
                return
            prompt = params.get("prompt") or []
            text = " ".join(str(b.get("text")) for b in prompt if isinstance(b, dict))
            session["prompts"].append(text)
            self.save(sid, session)
            self.say(sid, f"noted: {text}")
            self.answer(rid, {"stopReason": "end_turn"})
        elif rid is not None:
            self.fail(rid, -32601, f"method not found: {method}")

    def save(self, sid: str, session: dict[str, Any]) -> None:
        (self.sessions / f"{sid}.json").write_text(json.dumps(session))


def main() -> None:
    agent = Agent(Path(sys.argv[1]))
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape")
    for line in stdin:  # universal newlines: "\r" ends a line too
        if line.strip():
            agent.line(line)


if __name__ == "__main__":
    main()
