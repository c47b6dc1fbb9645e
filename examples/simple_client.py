"""Spawn an ACP agent, send it one prompt and print the reply as it streams in.

    python examples/simple_client.py [--prompt TEXT] [--yes] AGENT_COMMAND [ARGS...]

for example ``python examples/simple_client.py --prompt "echo hi" python tests/client/toolkit_agent.py``.
The session's folder is the current directory. Permission requests are rejected
unless ``--yes`` is given; tool calls are printed as they start and finish.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from acpwire import schema as s
from acpwire.client.permissions import AllowAll, RejectAll
from acpwire.client.state import SessionState
from acpwire.client.toolkit import AgentStartError, ToolkitClient, open_agent


def show(state: SessionState, update: s.SessionUpdate | None) -> None:
    """Print each piece of the agent's reply as it arrives."""
    if isinstance(update, s.AgentMessageChunk) and isinstance(update.content, s.TextContent):
        print(update.content.text, end="", flush=True)
    elif isinstance(update, (s.ToolCallStart, s.ToolCallProgress)):
        call = state.tool_calls[update.tool_call_id]
        if isinstance(update, s.ToolCallStart) or call.finished:
            print(f"\n[tool] {call.title or call.tool_call_id}: {call.display_status}", flush=True)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt", default="Hello!", help="what to send (default: Hello!)")
    parser.add_argument("--yes", action="store_true", help="allow every permission request")
    parser.add_argument(
        "command", nargs=argparse.REMAINDER, help="the agent command and its arguments"
    )
    args = parser.parse_args()
    if not args.command:
        parser.error("give the agent command to run")

    client = ToolkitClient(permissions=AllowAll() if args.yes else RejectAll())
    try:
        async with open_agent(args.command, client=client):
            state = await client.new_session(os.getcwd())
            # An agent may speak before session/new is answered: the state kept it.
            for message in state.messages:
                if message.role == "agent":
                    print(message.text, end="", flush=True)
            state.subscribe(show)
            result = await client.prompt(state.session_id, args.prompt)
            print(f"\n[{result.stop_reason}]")
    except (AgentStartError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
