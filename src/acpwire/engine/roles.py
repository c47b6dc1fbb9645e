"""What the agent and client roles share: routing from the method table,
capability gates, and the base of the typed peers.

A connection routes the rows of one :class:`~acpwire.schema.methods.MethodTable`
(stable v1 unless the application opts in to unstable ACP): a method outside it
is answered ``-32601`` like any unknown method, and its typed sender raises
:class:`UnstableMethodError` before anything is sent.

Routing by version: a connection that may speak v1 or the v2 draft builds one
router per version (each from its own table and handler) and starts on the v1
router with ``initialize`` replaced by a negotiating route
(:func:`with_initialize`). Once ``initialize`` chose a version, the role swaps in
that version's router (:meth:`Connection.use_router`) and retires the other
version's peer (:meth:`Peer.retire`): its calls raise
:class:`VersionMismatchError`, nothing sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Literal, cast

from ..protocol.errors import CapabilityError, UnstableMethodError, VersionMismatchError
from ..schema import to_json
from ..schema.methods import V1, V1_UNSTABLE, CapabilityGate, MethodSpec, MethodTable
from .connection import Connection, Route, Router

Side = Literal["agent", "client"]


def build_router(
    handler: Any,
    side: Side,
    table: MethodTable,
    overrides: dict[str, Callable[[Any], Awaitable[Any]]] | None = None,
) -> Router:
    """Route every method ``table`` assigns to ``side`` to ``handler.<python_name>``
    (or to the override given for its wire name)."""
    requests: dict[str, Route] = {}
    notifications: dict[str, Route] = {}
    overrides = overrides or {}
    for spec in table.handled_by(side):
        fn = overrides.get(spec.name) or getattr(handler, spec.python_name)
        (requests if spec.is_request else notifications)[spec.name] = Route(spec.params, fn)
    return Router(
        requests,
        notifications,
        ext_request=getattr(handler, "ext_method", None),
        ext_notification=getattr(handler, "ext_notification", None),
    )


def with_initialize(router: Router, negotiate: Callable[[Any], Awaitable[Any]]) -> Router:
    """``router`` with ``initialize`` served by ``negotiate``, which gets the params as
    plain JSON (their shape depends on the version they ask for)."""
    return Router(
        {**router.requests, "initialize": Route(Any, negotiate)},
        router.notifications,
        ext_request=router.ext_request,
        ext_notification=router.ext_notification,
    )


def capability_value(capabilities: Any, path: str) -> Any:
    """The JSON value at a dotted wire path inside a capabilities object (None if absent)."""
    node: Any = to_json(capabilities) if capabilities is not None else None
    for part in path.split("."):
        if not isinstance(node, dict):
            return None
        node = cast("dict[str, Any]", node).get(part)  # a JSON object
    return node


def gate_allows(gate: CapabilityGate, capabilities: Any, mode: str | None = None) -> bool:
    """Whether ``capabilities`` (of ``gate.advertised_by``) permit the gated call."""
    value = capability_value(capabilities, gate.path)
    if gate.kind == "bool":
        return value is True
    if gate.kind == "marker":
        return isinstance(value, dict)
    # "mode": the elicitation container must hold a non-null object for the mode used.
    return isinstance(value, dict) and isinstance(
        cast("dict[str, Any]", value).get(mode or ""), dict
    )


class Peer:
    """Base of the typed peers: the other side, as seen from this one.

    ``remote_capabilities`` is filled in by ``initialize``, ``local_capabilities``
    with what this side advertised there. Calls whose method is gated by a
    capability that was not advertised raise :class:`CapabilityError`, and calls
    of methods outside the connection's :attr:`table` raise
    :class:`UnstableMethodError`, before anything is sent.
    """

    side: ClassVar[Side]
    """The role of the other side: the one that handles what this peer sends."""

    def __init__(self, connection: Connection, table: MethodTable = V1) -> None:
        self.connection = connection
        self.table = table
        self.remote_capabilities: Any = None
        self.local_capabilities: Any = None
        self.check_capabilities = True
        self.retired: str | None = None
        """Why this peer may no longer send protocol methods (the connection negotiated
        another version), or None."""

    @property
    def unstable(self) -> bool:
        """Whether this connection opted in to unstable ACP."""
        return self.table.unstable

    def retire(self, version: int) -> None:
        """The connection negotiated ``version``, not this peer's: refuse every call."""
        self.retired = (
            f"this connection speaks ACP v{version}; the v{self.table.version} peer "
            "can no longer send protocol methods"
        )

    def _spec(self, method: str, request: bool | None = None) -> MethodSpec:
        if self.retired is not None:
            raise VersionMismatchError(self.retired)
        spec = self.table.get(method, self.side, request=request)
        if spec is not None:
            return spec
        if self.table.version != 1:
            raise ValueError(
                f"{method} is not a method of ACP v{self.table.version} the {self.side} handles"
            )
        if V1_UNSTABLE.get(method, self.side, request=request) is not None:
            own = "client" if self.side == "agent" else "agent"
            raise UnstableMethodError(
                f"{method} is an unstable ACP method and this connection did not opt in; "
                f"set `unstable = True` on the {own} handler to use it"
            )
        raise ValueError(f"{method} is not an ACP method the {self.side} handles")

    def _check(self, spec: MethodSpec, mode: str | None = None) -> None:
        gate = spec.gate
        if gate is None or not self.check_capabilities:
            return
        own = gate.advertised_by != self.side
        capabilities = self.local_capabilities if own else self.remote_capabilities
        if not gate_allows(gate, capabilities, mode):
            what = f"{gate.path}.{mode}" if gate.kind == "mode" else gate.path
            whose = f"this {gate.advertised_by}" if own else f"the {gate.advertised_by}"
            raise CapabilityError(
                f"{spec.name} needs the {gate.advertised_by} capability `{what}`, "
                f"which {whose} did not advertise"
            )

    async def _call(
        self, method: str, params: Any, mode: str | None = None, *, request: bool | None = None
    ) -> Any:
        spec = self._spec(method, request)
        self._check(spec, mode)
        if spec.is_request:
            return await self.connection.request(method, params, spec.result)
        await self.connection.notify(method, params)
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> Any:
        """Call an extension request (its name must start with ``_``)."""
        if not method.startswith("_"):
            raise ValueError(f"extension methods start with '_': {method!r}")
        return await self.connection.request(method, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Send an extension notification (its name must start with ``_``)."""
        if not method.startswith("_"):
            raise ValueError(f"extension notifications start with '_': {method!r}")
        await self.connection.notify(method, params)

    async def cancel_request(self, request_id: int | str) -> None:
        """Send ``$/cancel_request`` for one of this side's outgoing requests."""
        await self.connection.notify("$/cancel_request", {"requestId": request_id})
