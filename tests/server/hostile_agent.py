"""A stdio ACP agent that misbehaves on purpose, written without acpwire.

``python hostile_agent.py MODE``:

* ``wedge``: answers ``initialize``, then never reads its stdin again and
  ignores SIGTERM (only SIGKILL ends it).
* ``crash``: a normal agent until ``session/prompt``, which it answers by
  sending one update and exiting with status 1.
* ``noise``: a normal agent that also prints non-JSON lines on stdout (one
  holds a fake API key) before each answer.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

SECRET = "API_KEY=sk-live-0123456789-do-not-leak"


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request: dict[str, object], result: dict[str, object]) -> None:
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def main(mode: str) -> None:
    if mode == "wedge":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sessions = 0
    for line in sys.stdin:
        request = json.loads(line)
        method = request.get("method")
        if "id" not in request or method is None:
            continue
        if mode == "noise":
            print("debug: handling", method)
            print(SECRET)
            sys.stdout.flush()
        if method == "initialize":
            answer(
                request,
                {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []},
            )
            if mode == "wedge":
                while True:  # stop reading: stdin fills up, the writer stalls
                    time.sleep(3600)
        elif method == "session/new":
            sessions += 1
            answer(request, {"sessionId": f"hostile-{os.getpid()}-{sessions}"})
        elif method == "session/prompt":
            params = request["params"]
            assert isinstance(params, dict)
            if mode == "crash":
                send(
                    {
                        "jsonrpc": "2.0",
                        "method": "session/update",
                        "params": {
                            "sessionId": params["sessionId"],
                            "update": {
                                "sessionUpdate": "agent_message_chunk",
                                "content": {"type": "text", "text": "about to crash"},
                            },
                        },
                    }
                )
                os._exit(1)
            answer(request, {"stopReason": "end_turn"})
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )


if __name__ == "__main__":
    main(sys.argv[1])
