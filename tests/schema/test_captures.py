"""Real agents' messages (tests/captures) parse and re-serialize without losing anything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acpwire import schema as s
from acpwire.schema.methods import BY_NAME


def agent_messages(captures_dir: Path) -> list[tuple[str, Any, Any]]:
    """(label, model type, payload) for each agent->client params or result."""
    out = []
    for path in sorted(captures_dir.glob("*.jsonl")):
        asked: dict[Any, str] = {}
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            msg = rec.get("msg")
            if not isinstance(msg, dict):
                continue
            if rec["dir"] == "client->agent" and "method" in msg and "id" in msg:
                asked[msg["id"]] = msg["method"]
            if rec["dir"] != "agent->client":
                continue
            label = f"{path.stem}#{rec['seq']}"
            if "method" in msg and msg["method"] in BY_NAME:
                out.append((label, BY_NAME[msg["method"]].params, msg.get("params")))
            elif "result" in msg and asked.get(msg["id"]) in BY_NAME:
                spec = BY_NAME[asked[msg["id"]]]
                out.append((label, spec.result, msg["result"]))
    return out


def test_every_agent_message_of_every_capture_round_trips(captures_dir: Path) -> None:
    cases = agent_messages(captures_dir)
    assert len(cases) > 200
    lost = []
    for label, tp, payload in cases:
        value = s.convert(payload, tp)
        if s.to_json(value) != payload:
            lost.append(label)
    assert lost == []


def test_the_full_capture_covers_every_stable_session_update_kind(
    captures_dir: Path, official_schema: dict[str, Any]
) -> None:
    """Every stable session update kind appears in the TS-SDK capture and decodes to its own class."""
    stable = {
        p["const"]
        for branch in official_schema["$defs"]["SessionUpdate"]["oneOf"]
        for p in branch["properties"].values()
        if "const" in p
    }
    seen: dict[str, type] = {}
    for label, tp, payload in agent_messages(captures_dir):
        if tp is s.SessionNotification and label.startswith("ts-sdk-agent.full"):
            update = s.convert(payload, tp).update
            seen[payload["update"]["sessionUpdate"]] = type(update)
    assert set(seen) == stable
    assert not any(issubclass(cls, s.UnknownVariant) for cls in seen.values())
