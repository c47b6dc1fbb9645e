"""Names a package exports but loads on first use (PEP 562), to keep start-up short."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``names[attr]`` (a submodule of ``package``) on use."""

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{module}", package), name)
        vars(import_module(package))[name] = value
        return value

    return __getattr__


def moved_getattr(
    old: str, new: str, renamed: Mapping[str, str] | None = None
) -> Callable[[str], Any]:
    """A module ``__getattr__`` for a module that moved to ``new``: ``old.NAME`` still gives
    ``new.NAME`` for every name ``new`` exports (``new.renamed[NAME]`` for a renamed one),
    with a ``DeprecationWarning`` naming the new import.

    ``new`` is imported on first use, so the old module costs nothing and imports nothing
    from the layer the code moved to until someone still uses it.
    """
    renames = dict(renamed or {})

    def __getattr__(name: str) -> Any:
        target = renames.get(name, name)
        module = None if name.startswith("_") else import_module(new)
        if module is None or (name not in renames and name not in getattr(module, "__all__", ())):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(
            f"{old}.{name} moved: import {target} from {new} (the old path goes in 0.2)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(module, target)

    return __getattr__
