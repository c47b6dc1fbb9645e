"""Agent frameworks on ACP in one call: ``agent_app(agent).run()``.

One module per framework, each behind its own extra, all built on
:mod:`acpwire.adapters.bridge` (how a run's events become ACP updates) and the
public :class:`~acpwire.agent.app.AgentApp` / :class:`~acpwire.agent.turn.Turn` API:

* :mod:`acpwire.adapters.pydantic_ai` (``pip install 'acpwire[pydantic-ai]'``)
* :mod:`acpwire.adapters.openai_agents` (``pip install 'acpwire[openai-agents]'``)
* :mod:`acpwire.adapters.langgraph` (``pip install 'acpwire[langgraph]'``)
* :mod:`acpwire.adapters.smolagents` (``pip install 'acpwire[smolagents]'``)

Importing a module whose framework is missing raises ``ImportError`` with the
``pip install`` line to run. Nothing below :mod:`acpwire.adapters` imports it.
"""
