"""The client TLS context of acpwire's own HTTP connections (``_h1`` and ``_h2``)."""

from __future__ import annotations

import ssl


def client_context(verify: bool | ssl.SSLContext) -> ssl.SSLContext:
    """The caller's context, or the system's trust store (``verify=False``: no checks at all)."""
    if isinstance(verify, ssl.SSLContext):
        return verify
    context = ssl.create_default_context()
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
