"""Results of a check run: one :class:`CheckResult` per check, gathered in a :class:`Report`.

:class:`Verdicts` is what the checks write to while they run: the first verdict given for a
check stands, and checks that were not selected with ``--only`` are never recorded.

Exit status of ``acp check`` (:attr:`Report.exit_code`): 0 when no check failed at MUST
level, 1 when one did, 3 when nothing failed but the agent could not be checked past
authentication (so most checks were skipped). A usage error is 2 (the CLI's business).
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .registry import Check, Stage, Status, Target, strongest
from .requirements import Level

__all__ = ["EXIT_AUTH", "EXIT_FAILED", "EXIT_OK", "CheckResult", "Report", "Verdicts"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_AUTH = 3


@dataclass(slots=True)
class CheckResult:
    """A check's verdict; a failure names the requirement ids it broke (``broken``)."""

    check: Check
    status: Status
    detail: str = ""
    broken: tuple[str, ...] = ()

    @property
    def level(self) -> Level:
        """The failure's level: the strongest of the broken rules (the check's own otherwise)."""
        return strongest(self.broken) if self.broken else self.check.level

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check.key,
            "target": self.check.target,
            "title": self.check.title,
            "status": self.status,
            "level": self.level,
            "requirements": list(self.check.ids),
            "broken": list(self.broken),
            "needs": list(self.check.needs),
            "detail": self.detail,
        }


@dataclass
class Report:
    """Results in report order (:data:`~.catalogue.CHECKS`), plus what the checked program
    said about itself."""

    command: list[str]
    """The agent's command, or ``[URL]`` for an endpoint."""
    results: list[CheckResult] = field(default_factory=list[CheckResult])
    agent_info: dict[str, Any] | None = None
    """What the checked program said about itself: agentInfo, or a client's clientInfo."""
    protocol_version: Any = None
    notes: list[str] = field(default_factory=list[str])
    blocked: str | None = None
    """Why the checks stopped at authentication, when they did (for a client: why it could
    not be driven at all, e.g. it never started the agent)."""
    duration: float = 0.0
    target: Target = "agent"

    def completed(self, verdicts: Verdicts, started: float) -> Report:
        """This report with the run's verdicts and notes, timed from ``started``
        (``time.monotonic()``)."""
        self.results = verdicts.ordered()
        self.notes.extend(verdicts.notes)
        self.duration = time.monotonic() - started
        return self

    @property
    def failed_must(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "fail" and r.level == "MUST"]

    @property
    def exit_code(self) -> int:
        """1 when a check failed at MUST level, else 3 when blocked (an agent by
        authentication, a client that never started the agent or never prompted), else 0."""
        if self.failed_must:
            return EXIT_FAILED
        return EXIT_AUTH if self.blocked else EXIT_OK

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "skip": 0, "n/a": 0}
        for r in self.results:
            out[r.status] += 1
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "target": self.target,
            "clientInfo" if self.target == "client" else "agentInfo": self.agent_info,
            "protocolVersion": self.protocol_version,
            "results": [r.to_json() for r in self.results],
            "counts": self.counts(),
            "failedMust": [r.check.key for r in self.failed_must],
            "blockedByAuthentication" if self.target == "agent" else "blocked": self.blocked,
            "exitCode": self.exit_code,
            "notes": self.notes,
            "durationSeconds": round(self.duration, 3),
        }

    def to_junit_xml(self) -> str:
        """The report as JUnit XML: one testcase per check, a SHOULD failure as a failure too.

        CI systems show ``failure`` elements whatever their type, so the level goes into the
        ``type`` attribute (``MUST`` or ``SHOULD``) and ``skip`` and ``n/a`` become
        ``skipped``. The exit status, not this file, says whether the run passed.
        """
        counts = self.counts()
        suite = ET.Element(
            "testsuite",
            {
                "name": "acp check",
                "tests": str(len(self.results)),
                "failures": str(counts["fail"]),
                "errors": "0",
                "skipped": str(counts["skip"] + counts["n/a"]),
                "time": f"{self.duration:.3f}",
            },
        )
        properties = ET.SubElement(suite, "properties")
        for name, value in (
            ("command", " ".join(self.command)),
            ("agentInfo", repr(self.agent_info)),
            ("protocolVersion", repr(self.protocol_version)),
            ("exitCode", str(self.exit_code)),
        ):
            ET.SubElement(properties, "property", {"name": name, "value": value})
        for r in self.results:
            case = ET.SubElement(
                suite,
                "testcase",
                {"classname": f"acp-check.{r.check.target}", "name": _case_name(r.check)},
            )
            if r.status == "fail":
                failure = ET.SubElement(
                    case, "failure", {"type": r.level, "message": r.detail or "failed"}
                )
                failure.text = f"{r.check.title}\nbroken: {', '.join(r.broken)}\n{r.detail}"
            elif r.status in ("skip", "n/a"):
                ET.SubElement(case, "skipped", {"message": f"{r.status}: {r.detail}"})
        if self.notes:
            ET.SubElement(suite, "system-out").text = "\n".join(self.notes)
        ET.indent(suite)
        return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, "unicode") + "\n"


def _case_name(check: Check) -> str:
    return f"{check.key} [{', '.join(check.ids)}]"


class Verdicts:
    """The results of one run as the checks give them (first verdict per check wins).

    Only ``checks`` (those of the run's target kinds, in report order) are reported: an
    agent run says nothing about client checks, nor about endpoint checks.
    """

    def __init__(self, checks: Sequence[Check], selected: frozenset[str] | None = None) -> None:
        self.checks = tuple(checks)
        keys = frozenset(c.key for c in self.checks)
        self.selected = keys if selected is None else selected & keys
        """The keys of the checks to run and report (``--only``)."""
        self.results: dict[str, CheckResult] = {}
        self.notes: list[str] = []
        """What the checks saw that is no failure but worth saying (the report's notes)."""

    def note(self, text: str) -> None:
        """Add a note once (the same thing seen in several processes is said once)."""
        if text not in self.notes:
            self.notes.append(text)

    def newer(self, what: str) -> None:
        """Note a union member the checker's schema does not list (an auth method type, an
        update kind, a content kind): newer ACP schemas add members to these unions, so
        the peer may be newer than the checker. Never a failure."""
        self.note(f"newer than this checker's schema (not judged): {what}")

    def record(
        self, check: Check, status: Status, detail: str = "", broken: Iterable[str] = ()
    ) -> None:
        if check.key in self.selected and check.key not in self.results:
            ids = tuple(dict.fromkeys(broken)) if status == "fail" else ()
            unknown = set(ids) - set(check.ids)
            if unknown:
                raise ValueError(f"check {check.key} does not cite {sorted(unknown)}")
            self.results[check.key] = CheckResult(
                check, status, detail, ids or (check.ids if status == "fail" else ())
            )

    def fail(self, check: Check, detail: str, *broken: str) -> None:
        """Fail ``check`` for breaking ``broken`` (all its rules when none are named)."""
        self.record(check, "fail", detail, broken)

    def overrule(self, check: Check, detail: str, *broken: str) -> None:
        """Fail ``check`` even if it was judged already: later evidence outweighs a pass."""
        self.results.pop(check.key, None)
        self.fail(check, detail, *broken)

    def verdict(
        self,
        check: Check,
        problems: Sequence[str] | Sequence[tuple[str, str]],
        ok_detail: str = "",
    ) -> None:
        """Fail ``check`` with the first few problems, or pass it when there are none.

        A problem is a sentence, or a (requirement id, sentence) pair naming the rule broken.
        """
        if not problems:
            self.record(check, "pass", ok_detail)
            return
        texts: list[str] = []
        broken: list[str] = []
        for problem in problems:
            if isinstance(problem, tuple):
                broken.append(problem[0])
                texts.append(problem[1])
            else:
                texts.append(problem)
        detail = "; ".join(texts[:3]) + (f" (+{len(texts) - 3} more)" if len(texts) > 3 else "")
        self.record(check, "fail", detail, broken)

    def skip(self, checks: Iterable[Check], reason: str, status: Status = "skip") -> None:
        """Give every check of ``checks`` without a verdict ``status`` (skip or n/a)."""
        for check in checks:
            self.record(check, status, reason)

    def skip_stage(self, stage: Stage, reason: str) -> None:
        """Skip every check of ``stage`` that has no verdict yet."""
        self.skip((c for c in self.checks if c.stage == stage), reason)

    def skip_needing(self, need: str, stage: Stage, reason: str) -> None:
        """Skip every check of ``stage`` that needs ``need`` (e.g. a finished turn)."""
        self.skip((c for c in self.checks if c.stage == stage and need in c.needs), reason)

    def wants(self, *checks: Check) -> bool:
        return any(c.key in self.selected for c in checks)

    def wants_stage(self, *stages: Stage) -> bool:
        return any(c.stage in stages for c in self.checks if c.key in self.selected)

    def done(self, check: Check) -> bool:
        return check.key in self.results or check.key not in self.selected

    def result(self, check: Check) -> CheckResult | None:
        """``check``'s verdict so far, if it has one."""
        return self.results.get(check.key)

    def ordered(self) -> list[CheckResult]:
        """Every selected check in report order; one never reached is a skip."""
        out: list[CheckResult] = []
        for check in self.checks:
            if check.key in self.selected:
                out.append(
                    self.results.get(check.key)
                    or CheckResult(check, "skip", "not reached: an earlier step could not run")
                )
        return out
