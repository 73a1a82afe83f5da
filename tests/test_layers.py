"""The layers import only downward, and no module imports itself back in a cycle.

    channels, cli, daemon; embedded, client, records (the Python API)   (top)
    runtime, bus
    backends: the ports' implementations, chosen by the runtime; nothing below sees them
    features: memory, reminders, search, sessions, tasks, tools
    core
    ports, events
    llm, messages, config, config_file, config_reload, errors, clock, logs, text, secrets,
    schedule, embed, e5_numpy, files, keys, scope, lease_holder, extras, metrics,
    service_units   (bottom)

For layers every import counts, those inside functions and under TYPE_CHECKING too; for
cycles too, so no two modules name each other's types.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import lore

ROOT = Path(lore.__file__).parent

_LAYERS: list[tuple[int, tuple[str, ...]]] = [
    (7, ("lore.channels", "lore.cli", "lore.daemon", "lore.__main__", "lore")),
    (7, ("lore.embedded", "lore.client", "lore.records", "lore.adapters")),
    (6, ("lore.runtime", "lore.bus", "lore.import_job", "lore.import_extraction")),
    (5, ("lore.backends",)),
    (
        4,
        (
            "lore.memory",
            "lore.reminders",
            "lore.search",
            "lore.sessions",
            "lore.tasks",
            "lore.tools",
        ),
    ),
    (3, ("lore.core",)),
    (2, ("lore.ports", "lore.events")),
    (0, ("lore.llm", "lore.config", "lore.errors", "lore.clock", "lore.logs", "lore.text")),
    (0, ("lore.messages",)),
    (0, ("lore.config_file", "lore.config_reload", "lore.service_units")),
    (
        0,
        (
            "lore.secrets",
            "lore.schedule",
            "lore.embed",
            "lore.e5_numpy",
            "lore.files",
            "lore.keys",
            "lore.scope",
            "lore.lease_holder",
            "lore.extras",
            "lore.metrics",
            "lore.health",
        ),  # fmt: skip
    ),
]


def _layer(module: str) -> int:
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for layer, prefixes in _LAYERS:
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                if prefix == "lore" and module != "lore":
                    continue
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), layer)
    assert best is not None, f"{module} is in no layer: add it to the table"
    return best[1]


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


def _type_only(tree: ast.Module) -> set[int]:
    """Ids of the import nodes under `if TYPE_CHECKING:`."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                for inner in ast.walk(child):
                    found.add(id(inner))
    return found


def _imports(name: str, path: Path, *, runtime_only: bool = False) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skipped = _type_only(tree) if runtime_only else set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            # `from lore.x import y` may name the module lore.x.y
            found.update(f"{module}.{alias.name}" for alias in node.names)
    known = {n for n, _ in _modules()}
    return {m for m in found if m in known and m != name}


GRAPH = {name: _imports(name, path) for name, path in _modules()}
RUNTIME_GRAPH = {name: _imports(name, path, runtime_only=True) for name, path in _modules()}


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_a_module_imports_only_its_own_layer_or_below(module: str) -> None:
    own = _layer(module)
    upward = sorted(m for m in GRAPH[module] if _layer(m) > own)
    assert upward == [], f"{module} (layer {own}) imports from above: {upward}"


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            # A package importing its own modules (its __init__) is not a cycle.
            if node == nxt.rpartition(".")[0]:
                continue
            if state.get(nxt) == 1:
                cycles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return cycles


def test_no_module_imports_itself_through_a_cycle() -> None:
    assert _cycles(RUNTIME_GRAPH) == []


def test_no_module_names_itself_through_a_cycle_of_types_either() -> None:
    """Imports under TYPE_CHECKING make no cycle at run time, but two modules naming each
    other's types are one piece of design cut in two: the shared types belong lower."""
    assert _cycles(GRAPH) == []


_FEATURES = (
    "lore.memory",
    "lore.reminders",
    "lore.search",
    "lore.sessions",
    "lore.tasks",
    "lore.tools",
)
# Known exceptions, each a debt: purging a text asks search's sources of text; search's
# time spans read reminders' words for times, and so do scheduled tasks (one reading of
# times, shared).
_FEATURE_IMPORTS_KNOWN = {
    ("lore.memory.purge", "lore.search"),
    ("lore.memory.purge", "lore.search.sources"),
    ("lore.search.timespan", "lore.reminders.phrases"),
    ("lore.tasks", "lore.reminders"),
    ("lore.tasks", "lore.reminders.when"),
    ("lore.tasks.tools", "lore.reminders"),
    ("lore.tasks.tools", "lore.reminders.when"),
}


def _feature(module: str) -> str | None:
    return next((f for f in _FEATURES if module == f or module.startswith(f + ".")), None)


def test_a_feature_imports_no_other_features_modules() -> None:
    found = {
        (module, imported)
        for module, imports in GRAPH.items()
        for imported in imports
        if _feature(module) and _feature(imported) not in (None, _feature(module))
    }
    assert sorted(found - _FEATURE_IMPORTS_KNOWN) == []
