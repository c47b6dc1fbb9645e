"""A black-box conformance checker for ACP agents and remote endpoints (``acp check``).

The checker starts the agent as a child process, several times side by side, and talks
to it the way an editor would, through acpwire's client connection over real pipes,
while recording every line that crosses the pipes. Some checks judge answers as they
arrive (version negotiation, stop reasons, error codes, cancellation); the others read
the recording afterwards (nothing but JSON-RPC on stdout, every payload strictly valid
against the schema acpwire carries, one response per request, capability gates, tool
calls, paths and terminals). No npm and no ``jsonschema`` are needed.

The package is split by what each part holds: :mod:`.registry` (every check, its
requirement ids, its stage and what it needs), :mod:`.wire` (the recording),
:mod:`.driver` (driving one agent process), :mod:`.live` (checks that drive agents),
:mod:`.wire_checks` (checks over a recording or a capture), :mod:`.report` (results,
JSON and JUnit XML, exit status) and :mod:`.runner` (:func:`run_checks`).

Clients are checked the other way round (``acp check --client``, :func:`run_client_checks`):
the checker plays the agent. :mod:`.scripted_agent` is the relay the client starts in
the agent's place, :mod:`.client_driver` drives the client and the relay,
:mod:`.client_scene`, :mod:`.client_scenarios` and :mod:`.client_tool_scenarios` hold the
scenarios and their pass rules, :mod:`.client_wire_checks` the checks over everything the
client wrote, and :mod:`.client_runner` runs them all.

Remote endpoints (``acp check --url``, :class:`EndpointTarget` in
:attr:`CheckOptions.endpoint`) get their own checks: :mod:`.endpoint` (the target and the
ways to reach it), :mod:`.endpoint_checks` (the RFD's Streamable HTTP and WebSocket
rules) and :mod:`.security_checks` (authentication, browsers, principals, limits); the
agent checks then run through the endpoint.

Each check cites rule ids of :mod:`acpwire.conformance.requirements`. A failure names the
rules it broke and takes the strongest level among them; the run fails
(:attr:`Report.exit_code` 1) when a check fails at level MUST, and ends with 3 when the
agent could not be checked past authentication. Checks that cannot run say why
(``skip``); checks of features the agent does not offer are ``n/a``.
"""

from .client_runner import ClientCheckOptions, run_client_checks
from .endpoint import EndpointTarget
from .registry import CHECKS, NEEDS, CheckSpec, Status, select_checks
from .report import CheckResult, Report
from .runner import CheckOptions, run_checks
from .wire import Wire, load_capture
from .wire_checks import judge_wire

__all__ = [
    "CHECKS",
    "NEEDS",
    "CheckOptions",
    "CheckResult",
    "CheckSpec",
    "ClientCheckOptions",
    "EndpointTarget",
    "Report",
    "Status",
    "Wire",
    "judge_wire",
    "load_capture",
    "run_checks",
    "run_client_checks",
    "select_checks",
]
