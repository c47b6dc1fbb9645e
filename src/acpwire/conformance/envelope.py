"""The JSON-RPC 2.0 rules both sides are held to on the recording: the envelope of each
message, and one well-formed answer per request with the request's id.

The agent checks (:mod:`.agents.wire_checks`) apply them to what an agent wrote, the
client checks (:mod:`.clients.wire_checks`) to what a client wrote; the phrasing of a
problem is the same on both sides.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from ..protocol.errors import ErrorCode
from .wire import WireEntry, dict_of, id_key, short

__all__ = ["BAD_INPUT_CODES", "Answers", "envelope_problem"]

BAD_INPUT_CODES = frozenset({ErrorCode.PARSE_ERROR, ErrorCode.INVALID_REQUEST})
"""Errors JSON-RPC answers with id null: input whose id could not be read."""


def envelope_problem(entry: WireEntry) -> str | None:
    """What is wrong with the envelope of ``entry``'s message (a JSON object), if anything."""
    m = entry.message or {}
    what = m.get("method") or f"response {m.get('id')!r}"
    if m.get("jsonrpc") != "2.0":
        return f"{what}: jsonrpc is {m.get('jsonrpc')!r}"
    if "method" in m and not isinstance(m["method"], str):
        return f"method is {short(m['method'])}"
    if "method" in m and ("result" in m or "error" in m):
        return f"{what} is both a request and a response"
    if "method" not in m and "result" not in m and "error" not in m and "id" not in m:
        text = short(entry.raw.decode("utf-8", "replace"), 100)
        return f"neither a request nor a response: {text}"
    if "params" in m and not isinstance(m["params"], (dict, list)):
        return f"{what}: params is {short(m['params'])}"
    return None


class Answers:
    """The requests one side sent in one process, and what the other side answered.

    :meth:`answer` takes a response and names what is wrong with it: a (requirement id,
    sentence) pair per problem, each sentence prefixed with ``label``.
    """

    def __init__(self, label: str) -> None:
        self.label = label
        self.asked: dict[Hashable, WireEntry] = {}
        self.by_value: dict[str, Any] = {}
        """Request ids by their text, to tell an id answered with another JSON type."""
        self.count: dict[Hashable, int] = {}

    def ask(self, request: WireEntry) -> None:
        rid = (request.message or {})["id"]
        self.asked[id_key(rid)] = request
        self.by_value[str(rid)] = rid

    def answer(self, m: dict[str, Any]) -> list[tuple[str, str]]:
        """Problems with response ``m`` (which has an id that is not null)."""
        at, rid = f"[{self.label}]", m.get("id")
        if "result" not in m and "error" not in m:
            return [("RPC-001", f"{at} response {rid!r} has neither result nor error")]
        key = id_key(rid)
        if key not in self.asked:
            if str(rid) in self.by_value:
                sent = self.by_value[str(rid)]
                return [("RPC-003", f"{at} request id {sent!r} answered with id {rid!r}")]
            return [("RPC-003", f"{at} response to unknown id {rid!r}")]
        problems: list[tuple[str, str]] = []
        self.count[key] = self.count.get(key, 0) + 1
        if self.count[key] == 2:
            method = self.asked[key].method
            problems.append(("RPC-005", f"{at} {method} (id {rid!r}) answered twice"))
        if "result" in m and "error" in m:
            problems.append(("RPC-001", f"{at} response {rid!r} has both result and error"))
        elif "error" in m:
            err = dict_of(m["error"])
            code = err.get("code")
            if (
                not isinstance(code, int)
                or isinstance(code, bool)
                or not isinstance(err.get("message"), str)
            ):
                # The same error object in many answers is one defect: said once.
                problems.append(("RPC-001", f"{at} malformed error: {short(m['error'])}"))
        return problems

    def unanswered(self) -> list[WireEntry]:
        """The requests no answer named."""
        return [request for key, request in self.asked.items() if key not in self.count]
