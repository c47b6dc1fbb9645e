"""Results of a check run: one :class:`CheckResult` per check, gathered in a :class:`Report`.

:class:`Verdicts` is what the checks write to while they run: the first verdict given for a
check stands, and checks that were not selected with ``--only`` are never recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .registry import CHECKS, CHECKS_BY_KEY, INDEPENDENT_CHECKS, CheckSpec, Status

__all__ = ["CheckResult", "Report", "Verdicts"]


@dataclass(slots=True)
class CheckResult:
    check: CheckSpec
    status: Status
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check.key,
            "title": self.check.title,
            "status": self.status,
            "level": self.check.level,
            "requirements": list(self.check.ids),
            "detail": self.detail,
        }


@dataclass
class Report:
    """Results in :data:`CHECKS` order, plus what the agent said about itself."""

    command: list[str]
    results: list[CheckResult] = field(default_factory=list[CheckResult])
    agent_info: dict[str, Any] | None = None
    protocol_version: Any = None
    notes: list[str] = field(default_factory=list[str])
    duration: float = 0.0

    @property
    def failed_must(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "fail" and r.check.level == "MUST"]

    @property
    def exit_code(self) -> int:
        """0 when no MUST check failed, else 1."""
        return 1 if self.failed_must else 0

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "skip": 0, "n/a": 0}
        for r in self.results:
            out[r.status] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "agentInfo": self.agent_info,
            "protocolVersion": self.protocol_version,
            "results": [r.to_json() for r in self.results],
            "counts": self.counts(),
            "failedMust": [r.check.key for r in self.failed_must],
            "exitCode": self.exit_code,
            "notes": self.notes,
            "durationSeconds": round(self.duration, 3),
        }


class Verdicts:
    """The results of one run as the checks give them (first verdict per check wins)."""

    def __init__(self, selected: frozenset[str] | None) -> None:
        self.selected = selected if selected is not None else frozenset(CHECKS_BY_KEY)
        self.results: dict[str, CheckResult] = {}

    def record(self, key: str, status: Status, detail: str = "") -> None:
        spec = CHECKS_BY_KEY[key]
        if key in self.selected and key not in self.results:
            self.results[key] = CheckResult(spec, status, detail)

    def verdict(self, key: str, problems: Sequence[str], ok_detail: str = "") -> None:
        """Fail ``key`` with the first few ``problems``, or pass it when there are none."""
        if problems:
            self.record(
                key, "fail", "; ".join(problems[:3]) + (" ..." if len(problems) > 3 else "")
            )
        else:
            self.record(key, "pass", ok_detail)

    def skip_rest(self, reason: str) -> None:
        """Skip every check that needs the main connection (not the wire or version checks)."""
        for spec in CHECKS:
            if spec.key not in INDEPENDENT_CHECKS:
                self.record(spec.key, "skip", reason)

    def wants(self, *keys: str) -> bool:
        return any(k in self.selected for k in keys)

    def ordered(self) -> list[CheckResult]:
        return [self.results[c.key] for c in CHECKS if c.key in self.results]
