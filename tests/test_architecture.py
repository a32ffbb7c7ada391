"""The shape of the tree: no import cycles, msgpack and json only in the wire layer, layer rules.

Every check reads the source with ``ast`` and nothing is imported, so an
import hidden under ``if TYPE_CHECKING:`` or inside a function counts like
any other.  ``from pkg import name`` stands for ``pkg.name`` when that is a
module of the project, and for ``pkg`` otherwise.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("protocol", "server", "client_cli", "tools", "bench")
SERIALISERS = frozenset({"msgpack", "json", "orjson", "ujson", "simplejson"})

Graph = Mapping[str, frozenset[str]]


def project_modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Every module under the given top-level packages, by dotted name."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts).removesuffix(".__init__")
            found[name] = path
    return found


@dataclass(frozen=True)
class Import:
    """One imported name: ``import name``, or ``from name import member``."""

    line: int
    name: str
    member: str | None = None


def imports_of(path: Path, module: str) -> list[Import]:
    """Every import in the file, wherever it sits; relative ones made absolute."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            found += [Import(node.lineno, base, alias.name) for alias in node.names]
        elif isinstance(node, ast.Call) and _dynamic_import_target(node):
            found.append(Import(node.lineno, _dynamic_import_target(node)))
    return found


def _absolute(node: ast.ImportFrom, package: str) -> str:
    if node.level == 0:
        return node.module or ""
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base


def _dynamic_import_target(call: ast.Call) -> str:
    func = call.func
    named = isinstance(func, ast.Name) and func.id == "__import__"
    named = named or (isinstance(func, ast.Attribute) and func.attr == "import_module")
    first = call.args[0] if call.args else None
    if named and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return ""


def resolve(imported: Import, modules: Mapping[str, Path]) -> str | None:
    """The project module an import stands for, if any.

    ``from pkg import name`` is ``pkg.name`` when that is a module; otherwise
    the longest prefix of the imported name that is one.
    """
    if imported.member and f"{imported.name}.{imported.member}" in modules:
        return f"{imported.name}.{imported.member}"
    known = set(modules)
    parts = imported.name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, frozenset[str]]:
    """Module -> the project modules it imports (itself excluded)."""
    modules = project_modules(root, packages)
    graph: dict[str, frozenset[str]] = {}
    for module, path in modules.items():
        targets = {resolve(imported, modules) for imported in imports_of(path, module)}
        graph[module] = frozenset(t for t in targets if t is not None and t != module)
    return graph


def strongly_connected(graph: Graph) -> list[list[str]]:
    """The graph's strongly connected components (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def shortest_cycle(graph: Graph, start: str) -> list[str]:
    """A shortest path from ``start`` back to itself, both ends included."""
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    return [*paths[node], start]
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    following.append(nxt)
        frontier = following
    return []


def import_cycles(graph: Graph) -> list[str]:
    """A line per tangle of modules: cycles ``a -> b -> a`` until each member is named."""
    described: list[str] = []
    for component in strongly_connected(graph):
        if len(component) < 2:
            continue
        cycles: list[list[str]] = []
        for member in component:
            if not any(member in cycle for cycle in cycles):
                cycles.append(shortest_cycle(graph, member))
        described.append("; ".join(" -> ".join(cycle) for cycle in cycles))
    return sorted(described)


def test_the_project_has_no_import_cycles() -> None:
    cycles = import_cycles(import_graph(ROOT, PACKAGES))
    assert cycles == [], "import cycles:\n  " + "\n  ".join(cycles)


def test_the_graph_covers_every_module_and_every_kind_of_import() -> None:
    graph = import_graph(ROOT, PACKAGES)
    on_disk = set(project_modules(ROOT, PACKAGES))
    assert set(graph) == on_disk
    assert {"protocol.rules.game", "server.hub", "client_cli.tui.app", "bench.load"} <= on_disk
    assert "protocol.rules.cards" in graph["protocol.rules.game"]


def _write_package(root: Path, name: str, files: Mapping[str, str]) -> None:
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    for module, source in files.items():
        (root / name / f"{module}.py").write_text(source)


def test_the_cycle_finder_sees_type_checking_function_and_relative_imports(
    tmp_path: Path,
) -> None:
    _write_package(tmp_path, "pkg", {
        "a": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import b\n",
        "b": "def later() -> None:\n    from . import c\n",
        "c": "import pkg.a\n",
        "d": "from pkg.a import something\n",
    })
    _write_package(tmp_path, "flat", {
        "a": "from flat import b\n", "b": "from . import c\n", "c": "import os\n",
    })
    (tmp_path / "flat" / "sub").mkdir()
    (tmp_path / "flat" / "sub" / "__init__.py").write_text("from .. import c\n")
    (tmp_path / "flat" / "sub" / "e.py").write_text("from ..b import nothing_of_note\n")
    graph = import_graph(tmp_path, ["pkg", "flat"])
    assert graph["pkg.d"] == frozenset({"pkg.a"})
    assert graph["flat.a"] == frozenset({"flat.b"})
    assert graph["flat.sub"] == frozenset({"flat.c"})
    assert graph["flat.sub.e"] == frozenset({"flat.b"})
    assert import_cycles(graph) == ["pkg.a -> pkg.b -> pkg.c -> pkg.a"]
    assert import_cycles(import_graph(tmp_path, ["flat"])) == []


def test_the_cycle_finder_names_each_cycle_of_a_synthetic_graph() -> None:
    graph = {
        "a": frozenset({"b"}), "b": frozenset({"a", "c"}), "c": frozenset({"d"}),
        "d": frozenset({"e"}), "e": frozenset({"c"}), "f": frozenset({"a"}),
        "p": frozenset({"q", "r"}), "q": frozenset({"p"}), "r": frozenset({"q"}),
    }
    assert import_cycles(graph) == [
        "a -> b -> a",
        "c -> d -> e -> c",
        "p -> q -> p; r -> q -> p -> r",
    ]
    assert import_cycles({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset()}) == []


# --- Serialisation belongs to the wire layer ---------------------------------


def serialisation_imports(path: Path, module: str) -> list[str]:
    """``line N: name`` for every import of a serialisation library in the file."""
    return [
        f"line {imported.line}: {imported.name}"
        for imported in imports_of(path, module)
        if imported.name.partition(".")[0] in SERIALISERS
    ]


def _pure_modules() -> list[str]:
    modules = project_modules(ROOT, ["protocol", "server"])
    return [
        m for m in modules
        if (_within(m, "protocol") and not _within(m, "protocol.wire")) or _within(m, "server.race")
    ]


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.mark.parametrize("module", _pure_modules())
def test_no_pure_module_outside_the_wire_layer_serialises(module: str) -> None:
    path = project_modules(ROOT, PACKAGES)[module]
    found = serialisation_imports(path, module)
    assert found == [], f"{module} serialises outside protocol.wire: {found}"


def test_the_serialisation_check_catches_a_bad_source(tmp_path: Path) -> None:
    _write_package(tmp_path, "core", {
        "bad": "import os\nfrom json import dumps\n"
               "def later() -> None:\n    import msgpack.fallback\n"
               "    __import__('orjson')\n",
    })
    assert serialisation_imports(tmp_path / "core" / "bad.py", "core.bad") == [
        "line 2: json", "line 4: msgpack.fallback", "line 5: orjson",
    ]
    assert "protocol.rules.game" in _pure_modules()
    assert "server.race.room" in _pure_modules()
    assert "protocol.wire.codec" not in _pure_modules()


# --- The layers --------------------------------------------------------------


@dataclass(frozen=True)
class Layer:
    """What the modules under ``prefix`` may import.

    ``only`` lists the project packages allowed (None: any); ``never`` the ones
    forbidden; ``stdlib_only`` forbids every library outside the standard one.
    """

    prefix: str
    only: tuple[str, ...] | None = None
    never: tuple[str, ...] = ()
    stdlib_only: bool = False


# docs/architecture.md gives the same table in words.  Every layer whose prefix covers
# a module applies to it; tools and bench may import anything.
LAYERS = (
    Layer("protocol.rules", only=("protocol.rules",)),
    Layer("protocol.deals", only=("protocol.rules", "protocol.deals")),
    Layer("protocol.wire", only=("protocol.rules", "protocol.deals", "protocol.wire")),
    Layer("protocol", never=("server", "client_cli", "tools", "bench")),
    Layer("server.race", only=("protocol", "server.race"), stdlib_only=True),
    Layer("server.players", only=("server.race.records", "server.players")),
    Layer("server.storage", only=("server.race.records", "server.players", "server.storage")),
    Layer("server.recovery", only=("protocol", "server.race", "server.recovery", "server.logs")),
    Layer("server.transport", only=("protocol.wire", "server.transport", "server.logs",
                                    "server.config")),
    Layer("client_cli", never=("server",)),
)


def layer_breaches(layer: Layer, root: Path, packages: Iterable[str]) -> list[str]:
    """``importer -> imported`` for every import that ``layer`` forbids."""
    modules = project_modules(root, packages)
    breaches: list[str] = []
    for module, path in modules.items():
        if _within(module, layer.prefix):
            breaches += [f"{module} -> {name}" for name in _forbidden(layer, path, module, modules)]
    return breaches


def _forbidden(layer: Layer, path: Path, module: str, modules: Mapping[str, Path]) -> Iterator[str]:
    seen: set[str] = set()
    for imported in imports_of(path, module):
        target = resolve(imported, modules)
        if target is None:
            top = imported.name.partition(".")[0]
            if layer.stdlib_only and top and top not in sys.stdlib_module_names | {"__future__"}:
                target = top
            else:
                continue
        elif target == module or _allowed(layer, target):
            continue
        if target not in seen:
            seen.add(target)
            yield target


def _allowed(layer: Layer, target: str) -> bool:
    if any(_within(target, banned) for banned in layer.never):
        return False
    return layer.only is None or any(_within(target, ok) for ok in layer.only)


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.prefix)
def test_every_layer_imports_only_what_it_may(layer: Layer) -> None:
    breaches = layer_breaches(layer, ROOT, PACKAGES)
    assert breaches == [], f"the rule for {layer.prefix} is broken by:\n  " + "\n  ".join(breaches)


def test_the_layer_check_catches_a_forbidden_import(tmp_path: Path) -> None:
    _write_package(tmp_path, "low", {"a": "import os\n", "b": "from low import a\n"})
    _write_package(tmp_path, "high", {
        "c": "import low.a\n",
        "d": "import msgpack\nimport dataclasses\n",
    })
    (tmp_path / "low" / "bad.py").write_text("def later() -> None:\n    from high import c\n")
    packages = ["low", "high"]
    assert layer_breaches(Layer("low", only=("low",)), tmp_path, packages) == ["low.bad -> high.c"]
    assert layer_breaches(Layer("low", never=("high",)), tmp_path, packages) == [
        "low.bad -> high.c",
    ]
    assert layer_breaches(Layer("high", only=("low", "high")), tmp_path, packages) == []
    assert layer_breaches(Layer("high", stdlib_only=True), tmp_path, packages) == [
        "high.d -> msgpack",
    ]
