"""Where the official ACP JSON Schemas are found.

Order: ``$ACPWIRE_SCHEMA_DIR``; the npm package ``@agentclientprotocol/sdk``
installed by ``bin/_env.sh`` into ``.cache/npm``; a ``shared/acp-schema``
folder beside the checkout (the pinned copy of this workplace). The files are
never committed to the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NPM_SCHEMA = ROOT / ".cache" / "npm" / "node_modules" / "@agentclientprotocol" / "sdk" / "schema"
SHARED_SCHEMA = ROOT.parent / "shared" / "acp-schema"


def schema_dirs() -> list[Path]:
    dirs = []
    env = os.environ.get("ACPWIRE_SCHEMA_DIR")
    if env:
        dirs.append(Path(env))
    dirs += [NPM_SCHEMA, SHARED_SCHEMA]
    return dirs


def find_schema(name: str = "v1/schema.json") -> Path | None:
    """The first existing copy of ``name`` (e.g. ``v1/schema.json``), or None."""
    for base in schema_dirs():
        candidate = base / name
        if candidate.is_file():
            return candidate
    return None
