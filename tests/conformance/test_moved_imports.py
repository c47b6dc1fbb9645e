"""The checker moved from ``acpwire.testing.conformance`` to ``acpwire.conformance``; the
old import paths keep working until 0.2, each use warning with the new path."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import acpwire.conformance
import acpwire.conformance.requirements

MOVED = [
    ("acpwire.testing.conformance", "run_checks", acpwire.conformance, "run_checks"),
    ("acpwire.testing.conformance", "CHECKS", acpwire.conformance, "CHECKS"),
    ("acpwire.testing.conformance", "CheckSpec", acpwire.conformance, "Check"),
    ("acpwire.testing.requirements", "BY_ID", acpwire.conformance.requirements, "BY_ID"),
]


@pytest.mark.parametrize(("old", "name", "new", "new_name"), MOVED)
def test_an_old_import_path_still_gives_the_same_object_and_warns(
    old: str, name: str, new: object, new_name: str
) -> None:
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=f"from {new.__name__}"):  # type: ignore[attr-defined]
        value = getattr(module, name)
    assert value is getattr(new, new_name)


def test_importing_the_old_modules_warns_about_nothing_and_loads_nothing_new() -> None:
    """Only using a moved name warns; ``import acpwire.testing`` never loads the checker."""
    code = (
        "import sys, acpwire.testing, acpwire.testing.conformance, acpwire.testing.requirements\n"
        "print(','.join(m for m in sys.modules if m.startswith('acpwire.conformance')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == ""


def test_a_name_that_never_existed_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = importlib.import_module("acpwire.testing.conformance").no_such_name
