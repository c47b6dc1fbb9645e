"""What other modules still import from the endpoint's former core module.

The core was split by job (:mod:`.host`, :mod:`.connection`, :mod:`.admission`,
:mod:`.agent_side`, :mod:`.streams`, :mod:`.outbox`, :mod:`.claims`,
:mod:`.lifecycle`); import from those. This module goes once ``cli/serve.py``
imports :data:`~.agent_side.AgentTarget` from :mod:`.agent_side`.
"""

from .agent_side import AgentTarget

__all__ = ["AgentTarget"]
