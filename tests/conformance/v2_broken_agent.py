#!/usr/bin/env python3
"""A v2-draft agent with planted defects, one per v2 check (raw JSON lines, no acpwire).

It answers ``initialize`` with 2 and its ``info`` (correct), then breaks a rule in each
step the v2 checks look at: the prompt's answer names a user message it never reports
(V2-PROMPT-002), the turn has no ``running`` state (V2-PROMPT-003), an agent message
chunk has an empty ``messageId`` (V2-MSG-001) and one update carries a field the schema
does not define (V2-SCHEMA-001); ``session/cancel`` is ignored, so a slow turn ends
with ``end_turn`` (V2-CANCEL-001).
"""

from __future__ import annotations

import json
import sys
import threading

lock = threading.Lock()


def send(message: dict[str, object]) -> None:
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def update(session_id: str, body: dict[str, object]) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": body},
        }
    )


def turn(session_id: str, text: str) -> None:
    update(
        session_id,
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "",
            "content": {"type": "text", "text": "hi"},
        },
    )
    update(session_id, {"sessionUpdate": "session_info_update", "title": "t", "colour": "red"})
    if text.startswith("slow"):
        threading.Event().wait(0.5)
    update(session_id, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, rid, params = message.get("method"), message.get("id"), message.get("params") or {}
        if method == "initialize":
            result: object = {
                "protocolVersion": 2,
                "info": {"name": "broken-v2", "version": "1"},
                "capabilities": {"session": {}},
            }
        elif method == "session/new":
            result = {"sessionId": "s1"}
        elif method == "session/prompt":
            text = "".join(b.get("text", "") for b in params.get("prompt", []))
            send({"jsonrpc": "2.0", "id": rid, "result": {"messageId": "never-reported"}})
            threading.Thread(target=turn, args=(params["sessionId"], text), daemon=True).start()
            continue
        elif method == "session/close":
            result = {}
        elif rid is None:
            continue  # session/cancel and other notifications: ignored
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})


if __name__ == "__main__":
    main()
