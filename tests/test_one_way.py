"""One way for each mechanic (STYLE.md, docs/concepts/closing.md): a bounded wait is
``acpwire._waits.within``, a set of background tasks is ``acpwire._tasks.TaskSet``, and
``close``/``aclose`` mean the same on a public class that has both.

The source is read with :mod:`ast`: any ``asyncio.wait_for`` (bpo-42130: on 3.10 and
3.11 it loses a cancellation that meets the awaited thing completing), and any
``task.add_done_callback(tasks.discard)`` (the hand-rolled task set) fails the test.
The modules other work still has to convert are listed in ``NOT_YET``; the test also
fails when one of them is clean, so the list can only shrink.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "acpwire"

NOT_YET: dict[str, set[str]] = {
    "asyncio.wait_for": set(),
    "a hand-rolled task set": set(),
}


CLOSE_DIFFERS_FROM_ACLOSE: set[str] = set()
"""Public classes whose ``close()`` and ``aclose()`` do different things: none, and the
test fails if one comes back."""


def findings(tree: ast.AST) -> Iterator[str]:
    """What in ``tree`` another way should do (the keys of :data:`NOT_YET`)."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "wait_for"
            and isinstance(node.value, ast.Name)
            and node.value.id == "asyncio"
        ):
            yield "asyncio.wait_for"
        elif (
            isinstance(node, ast.ImportFrom)
            and node.module == "asyncio"
            and any(a.name == "wait_for" for a in node.names)
        ):
            yield "asyncio.wait_for"
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_done_callback"
            and any(isinstance(a, ast.Attribute) and a.attr == "discard" for a in node.args)
        ):
            yield "a hand-rolled task set"


def found_in_src() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {kind: set() for kind in NOT_YET}
    for path in sorted(PACKAGE.rglob("*.py")):
        for kind in findings(ast.parse(path.read_text(encoding="utf-8"))):
            found[kind].add(path.relative_to(SRC).as_posix())
    return found


def test_bounded_waits_use_within_and_background_tasks_a_task_set() -> None:
    found = found_in_src()
    for kind, allowed in NOT_YET.items():
        new = found[kind] - allowed
        assert not new, (
            f"{kind} in {sorted(new)}: use acpwire._waits.within / acpwire._tasks.TaskSet"
        )
        gone = allowed - found[kind]
        assert not gone, f"no {kind} left in {sorted(gone)}: remove them from NOT_YET"


def test_the_finder_finds_each_form() -> None:
    source = """
import asyncio
from asyncio import wait_for
async def f(t, tasks):
    await asyncio.wait_for(t, 1)
    t.add_done_callback(tasks.discard)
"""
    assert sorted(findings(ast.parse(source))) == [
        "a hand-rolled task set",
        "asyncio.wait_for",
        "asyncio.wait_for",
    ]
    assert list(findings(ast.parse("async def f(p):\n    await p.wait_for(1)\n"))) == []


def public_classes() -> dict[str, type]:
    found: dict[str, type] = {}
    for module in (
        "acpwire.agent",
        "acpwire.client",
        "acpwire.server",
        "acpwire.store",
        "acpwire.transports",
        "acpwire.testing",
    ):
        mod = importlib.import_module(module)
        for name in mod.__all__:
            value = getattr(mod, name)
            if inspect.isclass(value):
                found.setdefault(f"{module}.{name}", value)
    return found


def test_close_and_aclose_are_awaited_and_the_same_where_a_class_has_both() -> None:
    differ = set()
    for name, cls in public_classes().items():
        aclose = getattr(cls, "aclose", None)
        if aclose is not None:
            assert inspect.iscoroutinefunction(aclose), f"{name}.aclose is not async"
        close = getattr(cls, "close", None)
        if aclose is not None and close is not None and close is not aclose:
            differ.add(name)
    assert differ == CLOSE_DIFFERS_FROM_ACLOSE, (
        "a class with close() and aclose() makes one the other (close = aclose); "
        "remove fixed ones from CLOSE_DIFFERS_FROM_ACLOSE"
    )
