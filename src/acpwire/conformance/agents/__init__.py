"""Checks of an agent (``acp check -- AGENT``), driven live and read from the recording.

:mod:`.driver` drives one agent process; :mod:`.live` holds what a run's steps share;
the checks come in groups, each module declaring its checks beside the code that judges
them: :mod:`.handshake` (versions, initialize, end of input), :mod:`.jsonrpc`,
:mod:`.sessions`, :mod:`.turns`, :mod:`.cancellation`, :mod:`.optional` (what an agent
may offer), :mod:`.tools` and :mod:`.wire_checks` (the recording). :mod:`.runs` says in
what order the steps run.
"""
