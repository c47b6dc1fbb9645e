"""``acp check``: a black-box conformance checker for ACP agents, clients and endpoints.

Against an agent the checker starts it as a child process, several times side by side,
and talks to it the way an editor would, through acpwire's client connection over real
pipes, while recording every line that crosses the pipes. Some checks judge answers as
they arrive (version negotiation, stop reasons, error codes, cancellation); the others
read the recording afterwards (nothing but JSON-RPC on stdout, every payload strictly
valid against the schema acpwire carries, one response per request, capability gates,
tool calls, paths and terminals). No npm and no ``jsonschema`` are needed. A client is
checked the other way round (:func:`run_client_checks`): the checker plays the agent. A
remote endpoint (:class:`EndpointTarget` in :attr:`CheckOptions.endpoint`) gets the
Streamable HTTP, WebSocket and security checks, then the agent checks through it.

The package is laid out by what each part holds:

``requirements``  the rules (``requirements.json``) with their ids, levels and sources;
``registry``      what a check is, and :class:`~.registry.Group`, on which each module
                  declares its checks beside the code that judges them, citing the ids
                  of the rules they prove;
``catalogue``     every group in report order (:data:`CHECKS`), and :func:`select_checks`;
``wire``          the recording of a run; ``report``: verdicts, results, JSON and JUnit
                  XML, the exit status; ``runner``: :func:`run_checks`;
``agents/``       the checks of an agent, by group: handshake, JSON-RPC, sessions, turns,
                  cancellation, optional features, tools, the recording;
``clients/``      the scenarios a client is put through, and its recording;
``endpoints/``    Streamable HTTP, WebSocket and security;
``v2``            the v2 draft's checks (``acp check --protocol 2``).

A failure names the rules it broke and takes the strongest level among them; the run
fails (:attr:`Report.exit_code` 1) when a check fails at level MUST, and ends with 3 when
the target could not be checked past authentication. Checks that cannot run say why
(``skip``); checks of features the target does not offer are ``n/a``.
"""

from .agents.wire_checks import judge_wire
from .catalogue import CHECKS, checks_for, select_checks
from .clients.runner import run_client_checks
from .clients.scene import ClientCheckOptions
from .endpoints.target import EndpointTarget
from .options import CheckOptions
from .registry import NEEDS, Check, Status
from .report import CheckResult, Report
from .runner import run_checks
from .v2 import run_v2_checks
from .wire import Wire, load_capture

__all__ = [
    "CHECKS",
    "NEEDS",
    "Check",
    "CheckOptions",
    "CheckResult",
    "ClientCheckOptions",
    "EndpointTarget",
    "Report",
    "Status",
    "Wire",
    "checks_for",
    "judge_wire",
    "load_capture",
    "run_checks",
    "run_client_checks",
    "run_v2_checks",
    "select_checks",
]
