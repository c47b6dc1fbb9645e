"""A black-box conformance checker for ACP agents that speak stdio (``acp check``).

The checker starts the agent as a child process and talks to it the way an editor would,
through acpwire's client connection over real pipes, while recording every line that
crosses the pipes. Some checks look at answers (``initialize`` version negotiation, stop
reasons, error codes); the others read the recording afterwards: nothing but JSON-RPC on
stdout, every message valid against the official schema, every request answered once,
session updates before the response that ends their turn, no calls to methods the client
did not advertise.

The client advertises no optional capabilities at all, so any ``fs/*``, ``terminal/*`` or
``elicitation/create`` call from the agent is a violation; permission requests are
answered with a reject option (or ``cancelled``), so a checked agent never gets to change
anything. Sessions are created in a fresh temporary folder.

The package is split by what each part holds: :mod:`.registry` (the checks and their
requirement ids), :mod:`.wire` (the recording), :mod:`.live` (checks that drive agent
processes), :mod:`.wire_checks` (checks over the recording), :mod:`.report` (results)
and :mod:`.runner` (:func:`run_checks`).

Each check cites rule ids of :mod:`acpwire.testing.requirements`. A check's level is the
strongest level among its rules; the run fails (:attr:`Report.exit_code` 1) when a check
at level MUST fails. Checks that cannot run say why (``skip``); checks of features the
agent does not offer are ``n/a``.
"""

from .registry import CHECKS, CheckSpec, Status, select_checks
from .report import CheckResult, Report
from .runner import CheckOptions, find_official_schema, run_checks

__all__ = [
    "CHECKS",
    "CheckOptions",
    "CheckResult",
    "CheckSpec",
    "Report",
    "Status",
    "find_official_schema",
    "run_checks",
    "select_checks",
]
