"""A stdio ACP agent, written without acpwire, that reports the environment it was given.

It answers ``initialize`` with ``_meta.environment``: every variable of its own
environment and of a child process it starts (what a command the agent runs would
see), so a test can tell what ``acp serve`` hands its agents.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def main() -> None:
    child = subprocess.run(
        [sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))"],
        capture_output=True,
        check=True,
        text=True,
    )
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("method") != "initialize" or "id" not in request:
            continue
        result = {
            "protocolVersion": 1,
            "agentInfo": {"name": "env-agent", "version": "1"},
            "_meta": {"environment": dict(os.environ), "child": json.loads(child.stdout)},
        }
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}))
        sys.stdout.write("\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
