"""Answering ``elicitation/create``: form mode and URL mode, each through a callback.

Spec (elicitation.mdx): a form request carries a ``message`` and a flat
``requestedSchema``; a URL request carries an opaque ``elicitationId`` and a ``url`` to
open out of band. The answer is ``accept`` (form: with ``content``), ``decline`` or
``cancel``. The client advertises each mode with a non-null object
(``elicitation.form`` / ``elicitation.url``); ``elicitation/complete`` later names a
URL elicitation, and unknown or repeated ids are ignored (ELIC-019).

SDK policy (not spec text), in :class:`ElicitationHandler`:

* Only the modes with a callback are advertised. A request the handler cannot serve
  (mode not configured, or an unknown mode, ELIC-030) is declined.
* Form requests arrive as :class:`FormRequest` with the schema defaults already filled
  in (ELIC-010). Accepted content is validated against the schema (ELIC-008/014); when
  it does not conform, the callback is asked again with the errors and the previous
  answer, up to ``max_attempts`` times, then the request is cancelled.
* URL requests arrive as :class:`UrlRequest` with the host pulled out and warnings
  for things a user should notice (no HTTPS, punycode or non-ASCII host: ELIC-025).
  Opening the URL, and asking first (ELIC-003/023), is the callback's job.
* A callback that raises makes the answer ``cancel``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

from .. import schema as s
from ..protocol.forms import validate_form
from ..schema import UNSET, UnsetType, unset_to_none

__all__ = [
    "ElicitationAnswer",
    "ElicitationHandler",
    "FormRequest",
    "UrlRequest",
    "accept",
    "cancel",
    "decline",
    "form_defaults",
    "validate_form",
]

log = logging.getLogger("acpwire.client")

ElicitationAnswer = (
    s.ElicitationAcceptAction | s.ElicitationDeclineAction | s.ElicitationCancelAction
)
FormValue = str | int | float | bool | list[str]


def accept(content: Mapping[str, FormValue] | None = None) -> s.ElicitationAcceptAction:
    """Accept; form mode passes the user's answers as ``content``."""
    return s.ElicitationAcceptAction(content=UNSET if content is None else dict(content))


def decline() -> s.ElicitationDeclineAction:
    return s.ElicitationDeclineAction()


def cancel() -> s.ElicitationCancelAction:
    return s.ElicitationCancelAction()


@dataclass(frozen=True)
class FormRequest:
    """A form-mode request, ready to show: ``values`` are the defaults (or the last answer)."""

    message: str
    schema: s.ElicitationSchema
    values: dict[str, FormValue]
    errors: tuple[str, ...] = ()
    """Why the previous answer was refused; empty on the first attempt."""
    session_id: str | None = None
    tool_call_id: str | None = None
    params: s.ElicitationFormMode | None = field(default=None, repr=False)

    @property
    def properties(self) -> dict[str, s.ElicitationPropertySchema]:
        props = self.schema.properties
        return {} if isinstance(props, UnsetType) else dict(props)

    @property
    def required(self) -> list[str]:
        req = self.schema.required
        return [] if req is None or isinstance(req, UnsetType) else list(req)


@dataclass(frozen=True)
class UrlRequest:
    """A URL-mode request: ``host`` is what to highlight, ``warnings`` what to point out."""

    message: str
    url: str
    elicitation_id: str
    host: str
    warnings: tuple[str, ...] = ()
    session_id: str | None = None
    tool_call_id: str | None = None
    params: s.ElicitationUrlMode | None = field(default=None, repr=False)


FormCallback = Callable[[FormRequest], "ElicitationAnswer | Awaitable[ElicitationAnswer]"]
UrlCallback = Callable[[UrlRequest], "ElicitationAnswer | Awaitable[ElicitationAnswer]"]
CompleteCallback = Callable[[str], None]


class ElicitationHandler:
    """Serves ``elicitation/create`` and ``elicitation/complete`` through callbacks.

    ``form`` and ``url`` answer the two modes; a mode without a callback is not
    advertised and its requests are declined. ``on_complete`` is told the id of each
    URL elicitation the agent reports complete (once, and only for ids it asked about).
    """

    def __init__(
        self,
        *,
        form: FormCallback | None = None,
        url: UrlCallback | None = None,
        on_complete: CompleteCallback | None = None,
        max_attempts: int = 3,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.form = form
        self.url = url
        self.on_complete = on_complete
        self.max_attempts = max_attempts
        self._outstanding: set[str] = set()

    @property
    def outstanding(self) -> frozenset[str]:
        """URL elicitation ids accepted and not yet reported complete."""
        return frozenset(self._outstanding)

    def capabilities(self) -> s.ElicitationCapabilities | UnsetType:
        """The ``elicitation`` client capability: one marker per configured mode."""
        if self.form is None and self.url is None:
            return UNSET
        return s.ElicitationCapabilities(
            form=UNSET if self.form is None else s.ElicitationFormCapabilities(),
            url=UNSET if self.url is None else s.ElicitationUrlCapabilities(),
        )

    async def create(self, params: s.CreateElicitationRequest) -> ElicitationAnswer:
        """Answer one ``elicitation/create``."""
        try:
            if isinstance(params, s.ElicitationFormMode) and self.form is not None:
                return await self._form(params, self.form)
            if isinstance(params, s.ElicitationUrlMode) and self.url is not None:
                answer = await _call(self.url, url_request(params))
                if isinstance(answer, s.ElicitationAcceptAction):
                    self._outstanding.add(params.elicitation_id)
                return answer
        except Exception:
            log.exception("elicitation callback failed; answering cancel")
            return cancel()
        return decline()

    async def _form(
        self, params: s.ElicitationFormMode, callback: FormCallback
    ) -> ElicitationAnswer:
        values = form_defaults(params.requested_schema)
        errors: tuple[str, ...] = ()
        for _ in range(self.max_attempts):
            request = FormRequest(
                message=params.message,
                schema=params.requested_schema,
                values=values,
                errors=errors,
                session_id=unset_to_none(params.session_id),
                tool_call_id=unset_to_none(params.tool_call_id),
                params=params,
            )
            answer = await _call(callback, request)
            if not isinstance(answer, s.ElicitationAcceptAction):
                return answer
            content = answer.content
            given: dict[str, Any] = (
                {} if content is None or isinstance(content, UnsetType) else dict(content)
            )
            problems = validate_form(params.requested_schema, given)
            if not problems:
                return answer
            errors = tuple(problems)
            values = {**values, **given}
        log.warning(
            "form answer still invalid after %d attempts; answering cancel", self.max_attempts
        )
        return cancel()

    def complete(self, elicitation_id: str) -> bool:
        """Handle ``elicitation/complete``: true if the id was outstanding (ELIC-017/019)."""
        if elicitation_id not in self._outstanding:
            return False
        self._outstanding.discard(elicitation_id)
        if self.on_complete is not None:
            try:
                self.on_complete(elicitation_id)
            except Exception:
                log.exception("elicitation on_complete callback failed")
        return True


async def _call(callback: Callable[[Any], Any], request: Any) -> ElicitationAnswer:
    answer = callback(request)
    if inspect.isawaitable(answer):
        answer = await answer
    if not isinstance(
        answer, (s.ElicitationAcceptAction, s.ElicitationDeclineAction, s.ElicitationCancelAction)
    ):
        raise TypeError(
            f"elicitation callback returned {answer!r}; use accept(), decline() or cancel()"
        )
    return answer


def url_request(params: s.ElicitationUrlMode) -> UrlRequest:
    """Describe a URL-mode request for display: its host and anything suspicious about it."""
    warnings: list[str] = []
    try:
        parts = urlsplit(params.url)
        host = parts.hostname or ""
        scheme = parts.scheme.lower()
    except ValueError:
        host, scheme = "", ""
        warnings.append("the URL cannot be parsed")
    loopback = host in ("localhost", "127.0.0.1", "::1")
    if scheme != "https" and not (scheme == "http" and loopback):
        warnings.append(f"the URL does not use HTTPS (scheme {scheme or 'missing'!r})")
    if any(label.startswith("xn--") for label in host.split(".")):
        warnings.append("the host name uses punycode (it may imitate another domain)")
    if not host.isascii():
        warnings.append("the host name contains non-ASCII characters")
    return UrlRequest(
        message=params.message,
        url=params.url,
        elicitation_id=params.elicitation_id,
        host=host,
        warnings=tuple(warnings),
        session_id=unset_to_none(params.session_id),
        tool_call_id=unset_to_none(params.tool_call_id),
        params=params,
    )


# ---------------------------------------------------------------------- form schema helpers


def form_defaults(schema: s.ElicitationSchema) -> dict[str, FormValue]:
    """The ``default`` of every property that declares one (ELIC-010)."""
    values: dict[str, FormValue] = {}
    props = {} if isinstance(schema.properties, UnsetType) else schema.properties
    for name, prop in props.items():
        default = getattr(prop, "default", UNSET)
        if default is not None and not isinstance(default, UnsetType):
            # Only multi-select properties have list defaults, and those hold strings.
            values[name] = (
                list(cast("list[str]", default)) if isinstance(default, list) else default
            )
    return values
