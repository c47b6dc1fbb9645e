"""A misbehaving ACP agent for the ``acp chat`` robustness tests, written without acpwire.

It speaks raw newline-delimited JSON-RPC so that nothing in the library under test
shapes its behaviour. ``python hostile_agent.py MODE``; on ``session/prompt``:

* ``huge-chunk``: one ``agent_message_chunk`` of 20 MB, then ``end_turn``;
* ``oversize-line``: a 41 MB line (one JSON text, over the client's limit), then a
  normal chunk ``after the big line`` and ``end_turn``;
* ``orphan-exit``: starts a grandchild that inherits stdout and sleeps, then exits
  with status 7 without answering (the grandchild keeps the pipe open);
* ``thoughts``: two whole thoughts as separate chunks (as gemini-cli sends them), then
  token deltas, with no message ids, then a message;
* ``sigint``: leaves the prompt open and answers it ``cancelled`` on SIGINT;
* ``permission``: asks permission for an edit and waits for the answer forever;
  SIGINT is ignored (as an agent in the terminal's process group may) so the client
  must stop it itself;
* ``v2``: answers ``initialize`` with protocol version 2 and v2-shaped auth methods;
* ``v2-polite``: answers ``min(requested, 2)``, as an agent speaking v1 and v2 should;
* ``auth-at-prompt``: ``session/prompt`` answers -32000 until ``authenticate`` ran
  (auth methods as claude-agent-acp advertises them: terminal ones, plus an agent one);
* ``env-var``: advertises ``env_var`` methods (as codex-acp does) and a terminal one;
  ``session/new`` answers -32000 unless ``CODEX_API_KEY`` or ``OPENAI_API_KEY`` is set;
* ``noisy-auth``: ``session/new`` answers -32000 (as gemini-cli does); its agent
  method's ``authenticate`` prints a login URL and ``Enter the authorization code:``
  on stdout (as gemini-cli does), then never answers.
* ``spoof``: puts :data:`SPOOF` (escape sequences, C1 controls, bidi and zero-width
  characters, Rich markup) into every string the client shows: its name and version,
  mode and config names, the session title, commands, a thought, a message, the plan,
  usage, a tool call (title, location, diff, text, and the output of a terminal it
  asks the client to run), its stderr; then it asks permission with options whose
  names lie about their kind (``Reject`` for ``allow_always``, ``Allow`` for
  ``reject_once``), and answers the prompt with an error whose message carries it too.
* ``init-error``: answers ``initialize`` with an error (``-32603``), then waits for
  end of input.

Every mode answers ``initialize`` and ``session/new`` normally unless said otherwise.
``permission`` and ``orphan-exit`` write their pids (the agent's, then the
grandchild's) to ``$HOSTILE_PID_FILE`` when it is set.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

MODE = sys.argv[1] if len(sys.argv) > 1 else "huge-chunk"
SPOOF = (
    "\x1b[2K\x1b[1G\x1b[3A"  # erase the line, column 1, cursor up 3
    "\x1b[8mconcealed\x1b[28m"  # SGR 8: conceal
    "\x1b]52;c;UFdORUQtQ0xJUEJPQVJE\x07"  # OSC 52: write the clipboard
    "\x1b]0;PWNED-TITLE\x1b\\"  # OSC 0: the window title
    "\x1b]8;;https://evil.example/PWNED-LINK\x1b\\Reject\x1b]8;;\x1b\\"  # OSC 8: a link
    "\x9b2J\x9d0;PWNED-C1\x9c"  # 8-bit CSI (erase the screen) and OSC
    "\u202eReject\u202c\u200b"  # a bidi override, a zero-width space
    "[bold red]markup[/] :warning:"  # Rich markup and an emoji code, to stay as written
)
"""What a spoofing agent writes into its strings; ``PWNED`` appears only inside
control sequences, so it must never reach the terminal."""
SESSION = "sess_hostile"
BIG = 20 * 1024 * 1024
OVERSIZE = 41 * 1024 * 1024
out = sys.stdout.buffer


def send(message: dict[str, Any]) -> None:
    out.write(json.dumps(message).encode() + b"\n")
    out.flush()


def answer(request_id: Any, result: Any) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def fail(request_id: Any, code: int, message: str) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def chunk(text: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": SESSION,
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": text},
            },
        },
    }


def thought(text: str) -> dict[str, Any]:
    message = chunk(text)
    message["params"]["update"]["sessionUpdate"] = "agent_thought_chunk"
    return message


def auth_methods() -> list[dict[str, Any]]:
    if MODE == "auth-at-prompt":
        return [
            {"id": "claude-ai-login", "name": "Claude Subscription", "type": "terminal",
             "args": ["--cli", "auth", "login", "--claudeai"]},
            {"id": "token", "name": "API token", "description": "unlocks at once"},
        ]  # fmt: skip
    if MODE == "env-var":
        return [
            {"id": "codex-api-key", "name": "Use CODEX_API_KEY", "type": "env_var",
             "description": "Requires setting the `CODEX_API_KEY` environment variable.",
             "vars": [{"name": "CODEX_API_KEY"}]},
            {"id": "openai-api-key", "name": "Use OPENAI_API_KEY", "type": "env_var",
             "vars": [{"name": "OPENAI_API_KEY", "label": "OpenAI key"}],
             "link": "https://platform.openai.com/api-keys"},
            {"id": "chatgpt", "name": "Login with ChatGPT", "type": "terminal",
             "args": ["--login"], "env": {"CODEX_LOGIN": "1"}},
        ]  # fmt: skip
    if MODE == "noisy-auth":
        return [{"id": "oauth-personal", "name": "Log in with Google"}]
    return []


def initialize(request_id: Any, params: dict[str, Any]) -> None:
    if MODE == "init-error":
        fail(request_id, -32603, "cannot initialize: no model configured")
        return
    if MODE == "spoof":
        answer(request_id, {
            "protocolVersion": 1,
            "agentCapabilities": {},
            "authMethods": [],
            "agentInfo": {"name": f"spoof{SPOOF}", "version": SPOOF},
        })  # fmt: skip
        return
    if MODE == "v2":
        answer(request_id, {
            "protocolVersion": 2,
            "agentCapabilities": {},
            "authMethods": [{"methodId": "login", "name": "Log in", "type": "agent"}],
            "agentInfo": {"name": "v2-only", "version": "2.0.0"},
        })  # fmt: skip
        return
    version = min(int(params.get("protocolVersion", 1)), 2) if MODE == "v2-polite" else 1
    answer(
        request_id,
        {
            "protocolVersion": version,
            "agentCapabilities": {},
            "authMethods": auth_methods(),
            "agentInfo": {"name": f"hostile-{MODE}", "version": "1"},
        },
    )


def record_pids(*pids: int) -> None:
    pid_file = os.environ.get("HOSTILE_PID_FILE")
    if pid_file:
        with open(pid_file, "w") as f:
            f.write(" ".join(str(p) for p in pids))


def orphan_exit() -> None:
    # The grandchild inherits stdout (and stderr) and stays in the agent's process
    # group: end of file never comes, and stopping the group must end it.
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        stdin=subprocess.DEVNULL,
    )
    record_pids(os.getpid(), child.pid)
    os._exit(7)


def update(session_update: str, **fields: Any) -> None:
    send({
        "jsonrpc": "2.0", "method": "session/update",
        "params": {"sessionId": SESSION, "update": {"sessionUpdate": session_update, **fields}},
    })  # fmt: skip


def call(method: str, params: dict[str, Any]) -> Any:
    """Send a request and read until its answer (the client sends nothing else meanwhile)."""
    call_id = f"{method}-{time.monotonic_ns()}"
    send({"jsonrpc": "2.0", "id": call_id, "method": method, "params": params})
    while line := sys.stdin.buffer.readline():
        message = json.loads(line)
        if message.get("id") == call_id and "method" not in message:
            return message.get("result", message.get("error"))
    sys.exit(0)


def spoof_updates(terminal_id: str) -> list[dict[str, Any]]:
    """The ``update`` of each ``session/update`` the ``spoof`` mode sends, in order."""
    text = {"type": "text", "text": f"message {SPOOF}\n\n[a markdown link](https://evil.example/)"}
    return [
        {"sessionUpdate": "session_info_update", "title": f"title {SPOOF}"},
        {"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": f"cmd{SPOOF}", "description": f"does {SPOOF}",
             "input": {"hint": f"hint {SPOOF}"}}]},
        {"sessionUpdate": "current_mode_update", "currentModeId": f"ask{SPOOF}"},
        {"sessionUpdate": "agent_thought_chunk",
         "content": {"type": "text", "text": f"thinking {SPOOF}"}},
        {"sessionUpdate": "agent_message_chunk", "content": text},
        {"sessionUpdate": "agent_message_chunk", "content": {
            "type": "resource_link", "name": f"link {SPOOF}", "uri": f"file:///{SPOOF}"}},
        {"sessionUpdate": "plan", "entries": [
            {"content": f"step {SPOOF}", "priority": "high", "status": "pending"}]},
        {"sessionUpdate": "usage_update", "used": 1, "size": 10,
         "cost": {"amount": 1, "currency": SPOOF}},
        {"sessionUpdate": "tool_call", "toolCallId": "call_spoof",
         "title": f"Edit notes.txt {SPOOF}", "kind": "edit", "status": "pending",
         "locations": [{"path": f"/notes{SPOOF}.txt"}],
         "content": [
             {"type": "diff", "path": f"notes{SPOOF}.txt", "oldText": f"old {SPOOF}\n",
              "newText": f"new {SPOOF}\n"},
             {"type": "content", "content": {"type": "text", "text": f"text {SPOOF}"}},
             {"type": "terminal", "terminalId": terminal_id}]},
    ]  # fmt: skip


SPOOF_OPTIONS = [
    {"optionId": "yes-always", "name": f"Reject{SPOOF}", "kind": "allow_always"},
    {"optionId": "no-once", "name": f"Allow{SPOOF}", "kind": "reject_once"},
]
"""Permission options whose names say the opposite of their kinds."""


def spoof(request_id: Any) -> None:
    sys.stderr.write(f"agent stderr {SPOOF}\n")
    sys.stderr.flush()
    terminal = call("terminal/create", {
        "sessionId": SESSION, "command": "printf", "args": ["%s", f"terminal {SPOOF}"],
    })  # fmt: skip
    terminal_id = terminal["terminalId"]
    call("terminal/wait_for_exit", {"sessionId": SESSION, "terminalId": terminal_id})
    call("terminal/output", {"sessionId": SESSION, "terminalId": terminal_id})
    for params in spoof_updates(terminal_id):
        update(params.pop("sessionUpdate"), **params)
    call("session/request_permission", {
        "sessionId": SESSION, "toolCall": {"toolCallId": "call_spoof"}, "options": SPOOF_OPTIONS,
    })  # fmt: skip
    fail(request_id, -32603, f"failed {SPOOF}")


def prompt(request_id: Any) -> None:
    if MODE == "spoof":
        spoof(request_id)
        return
    if MODE == "huge-chunk":
        send(chunk("x" * (BIG - 1) + "!"))
    elif MODE == "oversize-line":
        filler = "y" * OVERSIZE
        send(chunk(filler))
        send(chunk("after the big line"))
    elif MODE == "orphan-exit":
        orphan_exit()
    elif MODE == "permission":
        send({
            "jsonrpc": "2.0", "id": "perm-1", "method": "session/request_permission",
            "params": {
                "sessionId": SESSION,
                "toolCall": {"toolCallId": "call_1", "title": "Edit notes.txt", "kind": "edit",
                             "status": "pending"},
                "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                            {"optionId": "reject", "name": "Reject", "kind": "reject_once"}],
            },
        })  # fmt: skip
        return  # never answers the prompt
    elif MODE == "sigint":
        STATE["prompt"] = request_id  # answered by the SIGINT handler

        def cancelled(signum: int, frame: Any) -> None:
            answer(STATE["prompt"], {"stopReason": "cancelled"})

        signal.signal(signal.SIGINT, cancelled)
        send(chunk("waiting for Ctrl-C"))
        return
    elif MODE == "thoughts":
        for text in (
            "**Planning**\n\nI will read the file.",
            "**Reading**\n\nNow the tests.",
            " Then",
            " the fix.",
        ):
            send(thought(text))
        send(chunk("done"))
    elif MODE == "auth-at-prompt" and not STATE["authenticated"]:
        fail(request_id, -32000, "Authentication required")
        return
    else:
        send(chunk("hello from the hostile agent"))
    answer(request_id, {"stopReason": "end_turn"})


STATE: dict[str, Any] = {"authenticated": False, "prompt": None}


def main() -> None:
    if MODE == "permission":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        record_pids(os.getpid())
    if MODE == "env-var" and "--login" in sys.argv:
        print("logged in (terminal method)")
        sys.exit(0)
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method is None or request_id is None:
            continue  # responses and notifications
        if method == "initialize":
            initialize(request_id, params)
        elif method == "authenticate":
            if MODE == "noisy-auth":
                print("Please visit the following URL to authorize the application:")
                print("https://accounts.example.com/o/oauth2/auth?client_id=hostile")
                print("Enter the authorization code:", flush=True)
                continue  # and never answer
            STATE["authenticated"] = True
            answer(request_id, {})
        elif method == "session/new":
            keys = ("CODEX_API_KEY", "OPENAI_API_KEY")
            if (MODE == "env-var" and not any(os.environ.get(k) for k in keys)) or (
                MODE == "noisy-auth"
            ):
                fail(request_id, -32000, "Authentication required")
            elif MODE == "spoof":
                answer(request_id, {
                    "sessionId": SESSION,
                    "modes": {"currentModeId": "ask", "availableModes": [
                        {"id": "ask", "name": f"Ask {SPOOF}"}]},
                    "configOptions": [
                        {"type": "select", "id": "model", "name": f"Model {SPOOF}",
                         "currentValue": "m1", "options": [
                             {"value": "m1", "name": f"model one {SPOOF}"}]}],
                })  # fmt: skip
            else:
                answer(request_id, {"sessionId": SESSION})
        elif method == "session/prompt":
            prompt(request_id)
        else:
            fail(request_id, -32601, f"Method not found: {method}")
    time.sleep(0.1)


if __name__ == "__main__":
    main()
