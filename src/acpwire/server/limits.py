"""Every bound the remote endpoint keeps, in one place, with the reason for its default.

A remote client is untrusted: whatever it can make the server hold (agents,
connections, bytes, bookkeeping, time) has a limit here, and reaching a limit
gets a documented answer (docs/remote.md, docs/security.md) instead of an
ever-growing server.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """Resource limits of one endpoint (:func:`~acpwire.server.asgi_app` ``limits=``)."""

    max_message_size: int = 16 * MiB
    """One JSON-RPC message, either way (POST body: 413; WebSocket frame: close 1009).
    16 MiB fits a prompt with several images; the stdio default of 64 MiB is for a
    trusted local peer."""
    queue_messages: int = 256
    """Messages waiting in one queue (to the agent, from it, per SSE stream)."""
    queue_bytes: int = 8 * MiB
    """Bytes waiting in one queue; a single larger message still passes when the
    queue is empty. Bounds memory per connection, where a count alone allowed
    256 x 64 MiB."""
    max_body_bytes_in_flight: int = 256 * MiB
    """POST bodies being read or waiting for the agent to take them, over the whole
    endpoint (503 beyond): an agent that stops reading cannot make the server
    hold every body POSTed to it."""
    max_connections: int = 1000
    """Open connections, with or without an agent (HTTP initialize: 503; WebSocket: close 1013)."""
    max_connections_per_principal: int = 100
    """So that one principal cannot take every connection slot."""
    max_waiting_connections: int = 256
    """TCP connections accepted on which no request has passed authentication yet; past
    it the oldest is closed. Idle sockets opened without a token then hold at most this
    many descriptors (a process often may open only 1,024), and authenticated clients
    are still accepted at once (docs/security.md)."""
    max_waiting_per_address: int = 64
    """The same, from one peer address: one host's idle sockets make room among their
    own, not among everyone's. (Behind a reverse proxy every client has the proxy's
    address; it reads a request's head before it connects, so its connections wait
    for milliseconds.)"""
    max_agents: int = 64
    """Connections with a running agent (an agent process each behind ``acp serve --``)."""
    max_agents_per_principal: int = 16
    """So that one principal cannot start every agent the machine can afford."""
    max_pending_requests: int = 1024
    """Client requests the agent has not answered yet, per connection; more are
    answered with an error by the endpoint."""
    max_sessions_per_connection: int = 1024
    """Session streams one connection may hold (HTTP); bounds what a client can
    make the server keep by naming session ids."""
    http2_max_streams: int = 1100
    """Concurrent streams on one HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS):
    the connection stream, up to ``max_sessions_per_connection`` session streams
    (each an open GET) and 75 POSTs in flight. A client at the bound waits for a
    stream to end before it starts another (httpx does); one that ignores the
    setting loses its connection (a protocol error). hypercorn's default, 100,
    would cap a client at 99 sessions."""
    resume_messages: int = 256
    """Messages each stream keeps after writing them, for a client that resumes the
    stream (SSE ``Last-Event-ID``, WebSocket re-attach). A client that comes back
    having missed more gets 410 and starts a new connection (docs/remote.md)."""
    resume_bytes: int = 8 * MiB
    """Bytes all the streams of one connection keep for resumes, oldest dropped first."""
    resume_timeout: float = 60.0
    """How long a resumable WebSocket connection whose socket dropped waits for its
    client to come back (its agent keeps running meanwhile), before it ends."""
    body_timeout: float = 30.0
    """Seconds for a whole POST body to arrive once its headers have (408 after)."""
    handshake_timeout: float = 30.0
    """Seconds between a WebSocket upgrade and its first message, ``initialize``."""
    initialize_timeout: float = 60.0
    """Seconds the agent has to answer ``initialize`` (HTTP: 502 after)."""
    idle_timeout: float | None = 1800.0
    """A connection with no message either way for this long is closed (``None``: never)."""
    close_timeout: float = 2.0
    """Teardown waits this long for the agent to end by itself after its input is
    closed (cancelled turns answer in milliseconds), then cancels it. An agent behind
    :class:`~acpwire.server.StdioBridge` that stopped reading cannot even see the end
    of its input; cancelling the bridge stops it in at most 1 s (stdin drain) + 2 s
    (after SIGTERM) before SIGKILL, so every close ends within about 5 s, under the
    10 s issue 8 asks for."""
    stall_timeout: float = 5.0
    """An agent whose input queue stays full this long (it took nothing) has failed:
    the connection ends broken. A healthy agent drains 256 messages or 8 MiB in far
    less; one that reads only between turns is sent far less than that."""
    barrier_timeout: float = 5.0
    """How long a ``session/load`` answer waits for its replay to be written (HTTP)."""
    session_stream_wait: float = 1.0
    """(HTTP) How long the first messages of a session just made wait for the client to
    open the session's stream before they take the connection stream: a client that
    opens it does so as soon as it has the session id, within milliseconds; one that
    never does gets them this much later. 0: never wait."""
