"""What acpwire's remote clients share of the durable transport draft.

RFD durable-resumable-http-transport (provisional names): a server that can
resume streams by cursor says so in its ``initialize`` answer
(``transport.resumable``, :func:`resumable_of`); a resume it cannot serve is
refused with a reason (:func:`refusal_reason`), of which only
``stream_in_use`` is worth trying again (and a gateway's 502, 503 or 504:
:data:`GATEWAY_ERRORS`); attempts are spaced by a jittered,
bounded backoff (:func:`backoff_delays`).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import msgspec


@dataclass(frozen=True)
class Durable:
    """What a server advertised of ``transport.resumable``."""

    retention_messages: int | None
    retention_seconds: float | None
    keepalive: float | None
    """Seconds between the server's keepalives (``None``: it sends none)."""


def _number(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def resumable_of(answer: bytes) -> Durable | None:
    """``transport.resumable`` of an ``initialize`` answer (v1 ``agentCapabilities``, v2
    ``capabilities``); ``None`` when it advertises none."""
    try:
        document = msgspec.json.decode(answer)
    except msgspec.DecodeError:
        return None
    result = cast("dict[str, Any]", document).get("result") if isinstance(document, dict) else None
    if not isinstance(result, dict):
        return None
    result = cast("dict[str, Any]", result)
    for key in ("agentCapabilities", "capabilities"):
        capabilities = result.get(key)
        if not isinstance(capabilities, dict):
            continue
        transport = cast("dict[str, Any]", capabilities).get("transport")
        if not isinstance(transport, dict):
            continue
        resumable = cast("dict[str, Any]", transport).get("resumable")
        if isinstance(resumable, dict):
            found = cast("dict[str, Any]", resumable)
            messages = _number(found.get("retentionMessages"))
            return Durable(
                int(messages) if messages is not None else None,
                _number(found.get("retentionSeconds")),
                _number(found.get("keepaliveSeconds")),
            )
    return None


GATEWAY_ERRORS = frozenset({502, 503, 504})
"""What a load balancer answers while the worker it sent a resume to is dead and it has
not noticed yet: worth trying again (another worker replays from the shared store)."""


def refusal_reason(body: bytes) -> str | None:
    """The ``reason`` of a 409 refusing a resume, if its body says one."""
    try:
        document = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return None
    reason = cast("dict[str, Any]", document).get("reason") if isinstance(document, dict) else None
    return reason if isinstance(reason, str) else None


def backoff_delays(initial: float = 0.1, maximum: float = 2.0) -> Iterator[float]:
    """Delays between attempts: ``initial`` doubling up to ``maximum``, each +-25 %, so that
    clients cut off together do not all come back at the same instant."""
    delay = initial
    while True:
        yield delay * random.uniform(0.75, 1.25)
        delay = min(delay * 2, maximum)
