"""Checks of a remote endpoint (``acp check --url``): :mod:`.target` (the endpoint and the
ways to reach it), :mod:`.http` (the RFD's Streamable HTTP profile), :mod:`.websocket`
(its WebSocket profile) and :mod:`.security` (authentication, browsers, principals,
limits). The agent checks then run through the endpoint."""
