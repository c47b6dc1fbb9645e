"""The package's import structure: layers in the order README's "What is inside" gives,
no import from a lower layer to a higher one, no import circle between modules, and the
protocol versions of each role kept apart as layers chosen at ``initialize``.

Imports are read from the source with :mod:`ast` (every ``import`` statement, those under
``TYPE_CHECKING`` and inside functions included: a deferred import is still coupling).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "acpwire"

# Lower number, lower layer. A module may import from its own layer and below.
LAYERS: dict[str, int] = {
    "schema": 0,
    "_flag": 0,
    "_lazy": 0,
    "_waits": 0,
    "_tasks": 0,
    "_closing": 0,
    "_gitconfig": 0,
    "protocol": 1,
    "sandbox": 2,
    "transports": 2,
    "engine": 3,
    "otel": 3,
    "store": 4,
    "agent": 5,
    "client": 5,
    "server": 6,
    "testing": 7,
    "adapters": 7,
    "conformance": 8,
    "demo": 9,
    "recorder": 9,
    "cli": 10,
}
# Same layer, still apart: the two roles mirror each other and never import each other.
APART = {frozenset({"agent", "client"})}
# Layers that never await (STYLE.md: the generated schema and the sans-IO core).
NO_ASYNCIO = {"schema", "protocol"}

# Within a role, ACP v1 and the v2 draft are layers (STYLE.md, "Choose the protocol
# version above the roles"): the v2 layer below, the modules that choose between the
# versions at ``initialize`` (or serve both) above both, every other module of the role
# is v1's.
V2_LAYER = {
    "acpwire.agent.v2",
    "acpwire.agent.app_v2",
    "acpwire.client.v2",
    "acpwire.client.toolkit_v2",
}
ABOVE_BOTH_VERSIONS = {
    "acpwire.agent",
    "acpwire.agent.connection",
    "acpwire.agent.app",
    "acpwire.client",
    "acpwire.client.connection",
    "acpwire.client.toolkit",
    "acpwire.client.toolkit_client",
}
# The low tiers of the two versions share the engine and nothing else.
LOW_TIERS = {"acpwire.agent.v2": "acpwire.agent.v1", "acpwire.client.v2": "acpwire.client.v1"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
# Parsed once, at collection: CPython 3.11's ast.parse can fail with "AST constructor
# recursion depth mismatch" when the garbage collector runs Python code (an earlier
# test's leaked socket warning) in the middle of it.
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def imports_of(name: str) -> Iterator[str]:
    """The acpwire modules ``name`` imports (a ``from pkg import sub`` names ``pkg.sub``)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(TREES[name]):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in MODULES)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in MODULES:
                    yield f"{target}.{alias.name}"
                elif target in MODULES:
                    yield target


GRAPH = {name: set(imports_of(name)) - {name} for name in MODULES}


def layer_of(name: str) -> str | None:
    """The top-level room of a module; None for the package facade ``acpwire`` itself."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else None


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def test_every_top_level_room_has_a_layer() -> None:
    rooms = {layer_of(name) for name in MODULES} - {None}
    assert rooms <= set(LAYERS), f"give these a layer in LAYERS: {sorted(rooms - set(LAYERS))}"


def test_no_module_imports_from_a_higher_layer_or_across_the_roles() -> None:
    wrong = []
    for name, targets in sorted(GRAPH.items()):
        here = layer_of(name)
        if here is None:
            continue
        for target in sorted(targets):
            there = layer_of(target)
            if there is None or there == here:
                continue
            if LAYERS[there] > LAYERS[here] or frozenset({here, there}) in APART:
                wrong.append(f"{name} -> {target}")
    assert not wrong, "imports going up (or across the roles):\n" + "\n".join(wrong)


def test_the_schema_and_the_protocol_core_never_import_asyncio() -> None:
    wrong = []
    for name in sorted(MODULES):
        if layer_of(name) not in NO_ASYNCIO:
            continue
        for node in ast.walk(TREES[name]):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            wrong += [f"{name} imports {n}" for n in names if n.split(".")[0] == "asyncio"]
    assert not wrong, "\n".join(wrong)


def test_no_import_circle() -> None:
    found = circles(GRAPH)
    assert not found, "import circles:\n" + "\n".join(sorted(str(sorted(c)) for c in found))


def reachable(name: str) -> set[str]:
    """Every module ``name`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        for target in GRAPH[todo.pop()] - seen:
            seen.add(target)
            todo.append(target)
    return seen


def test_the_v1_layer_never_reaches_the_v2_layer() -> None:
    wrong = [
        f"{name} -> {sorted(reachable(name) & V2_LAYER)}"
        for name in sorted(GRAPH)
        if layer_of(name) in ("agent", "client")
        and name not in V2_LAYER | ABOVE_BOTH_VERSIONS
        and reachable(name) & V2_LAYER
    ]
    assert not wrong, "v1 modules reaching the v2 layer:\n" + "\n".join(wrong)


def test_the_v2_layer_reaches_neither_what_chooses_it_nor_the_v1_low_tier() -> None:
    assert V2_LAYER <= set(GRAPH) and ABOVE_BOTH_VERSIONS <= set(GRAPH)
    wrong = [
        f"{name} -> {sorted(reachable(name) & ABOVE_BOTH_VERSIONS)}"
        for name in sorted(V2_LAYER)
        if reachable(name) & ABOVE_BOTH_VERSIONS
    ]
    wrong += [f"{v2} -> {v1}" for v2, v1 in LOW_TIERS.items() if v1 in reachable(v2)]
    assert not wrong, "\n".join(wrong)


def private_names_used(name: str) -> Iterator[str]:
    """``x._name`` where ``x`` is not ``self``/``cls``, and ``from m import _name``."""
    for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                yield f"{name}:{node.lineno} .{node.attr}"
        elif isinstance(node, ast.ImportFrom):
            yield from (f"{name}:{node.lineno} {a.name}" for a in node.names if _private(a.name))


def _private(attr: str) -> bool:
    return attr.startswith("_") and not attr.startswith("__")


def test_the_v2_layer_uses_only_public_names_of_what_it_is_built_on() -> None:
    wrong = [use for name in sorted(V2_LAYER) for use in private_names_used(name)]
    assert not wrong, "private names used by the v2 layer:\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": set()}, {frozenset({"a", "b"})}),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, {frozenset({"a", "b", "c"})}),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, set()),
    ],
)
def test_the_circle_finder_finds_circles(
    graph: dict[str, set[str]], expected: set[frozenset[str]]
) -> None:
    assert set(circles(graph)) == expected
