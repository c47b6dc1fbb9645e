"""The ACP flight recorder: record a conversation, replay either side, verify, view, trace.

* :func:`record_to` records a connection or transport in process into a *cassette*
  (line-delimited JSON, :mod:`.cassette`); ``acp record`` does it as a proxy in front of
  a stdio agent or a remote endpoint.
* Secrets are taken out before anything is written (:mod:`.redaction`).
* :func:`read_cassette` reads one back, also while it is being written; ``acp view``
  writes one as an HTML page (:mod:`.viewer`).

The format and the guarantees are in docs/recorder.md. Submodules load on first use.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr

if TYPE_CHECKING:
    from .cassette import Cassette, CassetteError, CassetteWriter, read_cassette
    from .recording import CassetteTransport, record_to
    from .redaction import RedactionSettings, Redactor

_LAZY = {
    "Cassette": "cassette",
    "CassetteError": "cassette",
    "CassetteTransport": "recording",
    "CassetteWriter": "cassette",
    "RedactionSettings": "redaction",
    "Redactor": "redaction",
    "read_cassette": "cassette",
    "record_to": "recording",
}

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "Cassette",
    "CassetteError",
    "CassetteTransport",
    "CassetteWriter",
    "RedactionSettings",
    "Redactor",
    "read_cassette",
    "record_to",
]
