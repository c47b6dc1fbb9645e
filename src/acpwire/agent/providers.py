"""LLM providers a client may reroute (unstable ``providers/list``, ``set``, ``disable``).

An app declares the providers its model calls go through
(``AgentApp(..., providers=[Provider("main", ["anthropic"], required=True)])``)
and, optionally, a hook told of every change (``@app.provider_changed``). A
client that opted in to unstable ACP can then point a provider at another
endpoint (a company gateway, say) or disable an optional one; the prompt
handler reads the effective routing with ``app.providers.current(id)``.

Rules (the schema's, and acpwire's where it says nothing):

* only declared providers can be set or disabled; ``apiType`` must be one the
  provider supports; ``baseUrl`` must be an absolute ``http``/``https`` URL;
  a ``required`` provider cannot be disabled. Each refusal is ``-32602``.
* ``providers/set`` replaces the provider's whole configuration, headers
  included. Headers may hold credentials: they are given to the hook and kept
  for the handler, never sent back (``providers/list`` shows ``apiType`` and
  ``baseUrl`` only), never logged (the config's ``repr`` hides them).
* the hook runs before the change is made: raising (a ``RequestError`` goes to
  the client as is) leaves the routing as it was.
* routing is the app's, for every connection and session, and lives in memory
  only: credentials are not written to the session store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from .. import schema as s
from ..protocol.errors import InvalidParams

__all__ = ["Provider", "ProviderConfig", "ProviderHook", "Providers"]


@dataclass(frozen=True)
class ProviderConfig:
    """One provider's effective routing. ``headers`` are secret (not in the repr)."""

    api_type: str
    base_url: str
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), repr=False)


@dataclass(frozen=True)
class Provider:
    """A provider the app routes model calls through; ``current`` is its initial routing
    (None: disabled until a client sets it)."""

    id: str
    supported: Sequence[str]
    """The ``LlmProtocol`` ids it can speak: ``anthropic``, ``openai``, ``azure`` ..."""
    required: bool = False
    current: ProviderConfig | None = None


ProviderHook = Callable[[str, ProviderConfig | None], Awaitable[None]]
"""``async def hook(provider_id, config_or_None_when_disabled)``; raise to refuse."""


class Providers:
    """The app's providers and their current routing (see the module docstring)."""

    def __init__(self, providers: Sequence[Provider] = ()) -> None:
        self.declared: dict[str, Provider] = {p.id: p for p in providers}
        self._current: dict[str, ProviderConfig | None] = {p.id: p.current for p in providers}
        self.hook: ProviderHook | None = None

    def __bool__(self) -> bool:
        return bool(self.declared)

    def current(self, provider_id: str) -> ProviderConfig | None:
        """The routing model calls through ``provider_id`` should use (None: disabled)."""
        self._declared(provider_id)
        return self._current[provider_id]

    def infos(self) -> list[s.ProviderInfo]:
        """What ``providers/list`` answers: no headers."""
        infos: list[s.ProviderInfo] = []
        for provider in self.declared.values():
            config = self._current[provider.id]
            current = (
                s.ProviderCurrentConfig(api_type=config.api_type, base_url=config.base_url)
                if config is not None
                else None
            )
            infos.append(
                s.ProviderInfo(
                    provider_id=provider.id,
                    supported=list(provider.supported),
                    required=provider.required,
                    current=current,
                )
            )
        return infos

    async def set(
        self, provider_id: str, api_type: str, base_url: str, headers: Mapping[str, str]
    ) -> None:
        provider = self._declared(provider_id)
        if api_type not in provider.supported:
            raise InvalidParams(
                f"provider {provider_id!r} does not speak {api_type!r}",
                {"providerId": provider_id, "supported": list(provider.supported)},
            )
        from urllib.parse import urlsplit  # (here: most agents never set a provider)

        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidParams(
                "baseUrl must be an absolute http or https URL", {"baseUrl": base_url}
            )
        await self._change(
            provider_id, ProviderConfig(api_type, base_url, MappingProxyType(dict(headers)))
        )

    async def disable(self, provider_id: str) -> None:
        if self._declared(provider_id).required:
            raise InvalidParams(
                f"provider {provider_id!r} is required and cannot be disabled",
                {"providerId": provider_id},
            )
        await self._change(provider_id, None)

    async def _change(self, provider_id: str, config: ProviderConfig | None) -> None:
        if self.hook is not None:
            await self.hook(provider_id, config)  # may refuse: nothing changed yet
        self._current[provider_id] = config

    def _declared(self, provider_id: str) -> Provider:
        provider = self.declared.get(provider_id)
        if provider is None:
            raise InvalidParams(
                f"unknown provider {provider_id!r}",
                {"providerId": provider_id, "providers": list(self.declared)},
            )
        return provider
