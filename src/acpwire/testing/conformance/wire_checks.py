"""Checks over the recording of a whole check run (every process, every line).

They run after the live checks: stdout hygiene, schema validity, one response per
request, capability gates and the sessions named by updates.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import schema as s
from ...engine.roles import gate_allows
from ...schema.methods import BY_NAME
from .live import CLIENT_CAPABILITIES, Run, walk_config_options
from .report import Verdicts
from .wire import WireEntry, dict_of, short


class WireChecks:
    """Judges the recording; ``runs`` are the live runs, for their labels and sessions."""

    def __init__(self, verdicts: Verdicts, entries: list[WireEntry], runs: Sequence[Run]) -> None:
        self.verdicts = verdicts
        self.entries = entries
        self.runs = runs

    def run_all(self, schema: dict[str, Any] | None, schema_note: str | None) -> None:
        self._stdout_clean()
        self._schema(schema, schema_note)
        self._responses()
        self._gates()
        self._update_sessions()

    def _stdout_clean(self) -> None:
        bad = 0
        seen: dict[str, list[str]] = {}  # distinct bad line -> runs it appeared in
        for e in self.entries:
            if e.direction != "from_agent":
                continue
            try:
                e.raw.decode("utf-8")
            except UnicodeDecodeError:
                what = f"not UTF-8: {short(e.raw)}"
            else:
                m = e.message
                if m is not None and m.get("jsonrpc") == "2.0":
                    continue
                what = repr(short(e.raw.decode("utf-8", "replace"), 60))
            bad += 1
            seen.setdefault(what, []).append(e.run)
        count = sum(1 for e in self.entries if e.direction == "from_agent")
        if bad:
            shown = [f"{what} ({', '.join(runs)})" for what, runs in list(seen.items())[:3]]
            self.verdicts.record(
                "stdout-clean",
                "fail",
                f"{bad} line(s) on stdout are not JSON-RPC messages: " + "; ".join(shown),
            )
        else:
            self.verdicts.record("stdout-clean", "pass", f"{count} line(s), all JSON-RPC")

    def _schema(self, schema: dict[str, Any] | None, note: str | None) -> None:
        if schema is None:
            self.verdicts.record("schema", "skip", note or "no schema")
            return
        from ..schema_check import SchemaValidator

        problems: list[str] = []
        checked = 0
        for run in self.runs:
            validator = SchemaValidator(schema)
            for e in run.entries():
                m = e.message
                if m is None:
                    continue  # reported by stdout-clean
                if e.direction == "to_agent":
                    validator.note_request(m)
                    continue
                checked += 1
                try:
                    validator.validate(m)
                except AssertionError as exc:
                    problems.append(f"[{run.label}] {short(str(exc), 120)}")
                except Exception as exc:  # jsonschema.ValidationError
                    what = m.get("method") or f"response {m.get('id')!r}"
                    path = getattr(exc, "json_path", "")
                    msg = getattr(exc, "message", str(exc))
                    problems.append(f"[{run.label}] {what} {path}: {short(msg, 120)}")
        self.verdicts.verdict("schema", problems, f"{checked} message(s) valid")

    def _responses(self) -> None:
        problems: list[str] = []
        for run in self.runs:
            requests: dict[Any, str] = {}
            answers: dict[Any, int] = {}
            for e in run.entries():
                m = e.message
                if m is None:
                    continue
                if e.direction == "to_agent" and "method" in m and "id" in m:
                    requests[(type(m["id"]).__name__, m["id"])] = str(m["method"])
                elif e.direction == "from_agent" and "method" not in m:
                    rid = m.get("id")
                    if rid is None:
                        continue  # answers to unparseable lines: see malformed-line-error
                    key = (type(rid).__name__, rid)
                    if key not in requests:
                        problems.append(f"[{run.label}] response to unknown id {rid!r}")
                        continue
                    answers[key] = answers.get(key, 0) + 1
                    if ("result" in m) == ("error" in m):
                        problems.append(
                            f"[{run.label}] response {rid!r} must have exactly one of result/error"
                        )
                    elif "error" in m:
                        err = dict_of(m["error"])
                        code = err.get("code")
                        if (
                            not isinstance(code, int)
                            or isinstance(code, bool)
                            or not isinstance(err.get("message"), str)
                        ):
                            problems.append(f"[{run.label}] malformed error in response {rid!r}")
            for key, method in requests.items():
                n = answers.get(key, 0)
                if n == 0:
                    problems.append(f"[{run.label}] {method} (id {key[1]!r}) never answered")
                elif n > 1:
                    problems.append(f"[{run.label}] {method} (id {key[1]!r}) answered {n} times")
        self.verdicts.verdict("responses", problems)

    def _gates(self) -> None:
        problems: list[str] = []
        caps = s.convert(CLIENT_CAPABILITIES, s.ClientCapabilities)
        for e in self.entries:
            method = e.method
            if e.direction != "from_agent" or method is None:
                continue
            spec = BY_NAME.get(method)
            if spec is None or spec.gate is None or spec.gate.advertised_by != "client":
                continue
            params = dict_of((e.message or {}).get("params"))
            mode = params.get("mode") if isinstance(params.get("mode"), str) else None
            if not gate_allows(spec.gate, caps, mode):
                problems.append(f"[{e.run}] called {method} (needs {spec.gate.path})")
        boolean_ok = False  # the checker never advertises session.configOptions.boolean
        if not boolean_ok:
            for e in self.entries:
                if e.direction != "from_agent":
                    continue
                for option in walk_config_options(e.value if e.message is not None else None):
                    if dict_of(option).get("type") == "boolean":
                        problems.append(
                            f"[{e.run}] boolean config option {dict_of(option).get('id')!r} "
                            "offered without session.configOptions.boolean"
                        )
                        break
        self.verdicts.verdict(
            "capability-gates", problems, "none (client advertised no capabilities)"
        )

    def _update_sessions(self) -> None:
        problems: list[str] = []
        for run in self.runs:
            for e in run.entries():
                su = e.session_update()
                if su is not None and su[0] not in run.sessions:
                    problems.append(f"[{run.label}] session/update for unknown session {su[0]!r}")
        self.verdicts.verdict("update-sessions", problems)
