"""A deliberately non-conforming stdio agent for the ``acp check`` tests (no acpwire inside).

Its defects: it prints a banner to stdout (TRANS-004), echoes whatever protocol version it
is asked for (INIT-009), and ignores ``session/cancel``: a ``slow`` prompt always ends with
``end_turn`` (CANCEL-004). Everything else is done right, so only those checks should fail.
"""

from __future__ import annotations

import json
import sys
import time


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    print("broken agent 0.1 starting up")  # defect: not JSON-RPC, on stdout
    sys.stdout.flush()
    sessions: list[str] = []
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue  # unanswered parse errors are allowed
        if not isinstance(message, dict) or "id" not in message:
            continue  # notifications, session/cancel included (defect: ignored)
        rid = message["id"]
        method = message.get("method")
        params = message.get("params") or {}
        if method == "initialize":
            result: dict[str, object] = {
                # defect: echoes the requested version, supported or not
                "protocolVersion": params.get("protocolVersion"),
                "agentCapabilities": {},
                "agentInfo": {"name": "broken-agent", "version": "0.1"},
            }
        elif method == "session/new":
            sessions.append(f"b{len(sessions) + 1}")
            result = {"sessionId": sessions[-1]}
        elif method == "session/prompt" and params.get("sessionId") in sessions:
            sid = params["sessionId"]
            text = " ".join(b.get("text", "") for b in params.get("prompt", []))
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {
                        "sessionId": sid,
                        "update": {
                            "sessionUpdate": "agent_message_chunk",
                            "content": {"type": "text", "text": f"working on {text}"},
                        },
                    },
                }
            )
            if text == "slow":
                time.sleep(0.2)  # the cancel arrives meanwhile and is never read in time
            result = {"stopReason": "end_turn"}
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": f"Method not found: {method}"},
                }
            )
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})


if __name__ == "__main__":
    main()
