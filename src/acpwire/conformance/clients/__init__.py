"""Checks of a client (``acp check --client``): the checker plays the agent.

:mod:`.scripted_agent` is the relay the client starts in the agent's place and
:mod:`.driver` drives the client and the relay; :mod:`.scene` is the stage a scenario is
played on. The scenarios, each declaring the checks it judges: :mod:`.manners` (the
handshake and JSON-RPC manners), :mod:`.hostile` (odd and hostile agents) and
:mod:`.tools` (files, terminals, a cancelled permission); :mod:`.wire_checks` reads
everything the client wrote, and :mod:`.runner` runs it all.
"""
