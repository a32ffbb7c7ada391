"""aiohttp's insides are touched only in ``server/transport/``, and server modules import no circle.

The rule checked, on every module under ``protocol/``, ``server/``,
``client_cli/`` and ``bench/`` outside ``server/transport/`` (parsed with
``ast``, never imported):

- no import of a private aiohttp module or name: ``import aiohttp._x``,
  ``from aiohttp._x import ...``, ``from aiohttp.web import _y``;
- in a module that imports aiohttp, no access ``x._name`` (nor
  ``getattr(x, "_name")``) on anything but ``self``/``cls`` where ``_name``
  is one of aiohttp's own private names: an attribute aiohttp sets on
  ``self``/``cls`` or defines in a class body, collected from aiohttp's
  source as installed.  A module's own privates (``self._x``) and private
  names aiohttp never uses (``executor._processes``) are not flagged.

And among the ``server`` modules, imports (those under ``TYPE_CHECKING``
included) form no cycle; the transport imports nothing of the domain shell
(the hub, the app, the lobby or the rooms).

Each check runs on a small bad source too, so it is known to fail.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("protocol", "server", "client_cli", "bench")
TRANSPORT = ROOT / "server" / "transport"
#: What the transport may not import: the domain shell and the reducers it serves.
DOMAIN = frozenset({"server.hub", "server.app", "server.race.lobby", "server.race.room"})
#: The hub's parts (``server/hub_*.py``) belong to the domain shell too.
DOMAIN |= {f"server.hub_{part}" for part in ("deals", "hello", "messages", "races", "rooms",
                                             "shutdown")}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@cache
def aiohttp_private_names() -> frozenset[str]:
    """Private attribute names aiohttp's own code sets or defines on its classes."""
    names: set[str] = set()
    for path in Path(aiohttp.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id in ("self", "cls") and _private(node.attr):
                    names.add(node.attr)
            elif isinstance(node, ast.ClassDef):
                names |= {name for name in _defined(node.body) if _private(name)}
    return frozenset(names)


def _defined(body: Iterable[ast.stmt]) -> Iterable[str]:
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield stmt.name
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            yield stmt.target.id
        elif isinstance(stmt, ast.Assign):
            yield from (t.id for t in stmt.targets if isinstance(t, ast.Name))


def boundary_breaches(source: str, private: frozenset[str]) -> list[str]:
    """Where ``source`` reaches into aiohttp's insides (see the module docstring)."""
    tree = ast.parse(source)
    found: list[str] = []
    uses_aiohttp = False
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                uses_aiohttp |= parts[0] == "aiohttp"
                if parts[0] == "aiohttp" and any(_private(p) for p in parts):
                    found.append(f"line {line}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] != "aiohttp":
                continue
            uses_aiohttp = True
            if any(_private(p) for p in parts):
                found.append(f"line {line}: from {node.module} import")
            found += [
                f"line {line}: from {node.module} import {alias.name}"
                for alias in node.names
                if _private(alias.name)
            ]
    if uses_aiohttp:
        found += _private_accesses(tree, private)
    return sorted(found, key=lambda text: int(text.split(":")[0].removeprefix("line ")))


def _private_accesses(tree: ast.AST, private: frozenset[str]) -> list[str]:
    found = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Attribute):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                name = node.attr
        elif _is_attr_call(node):
            assert isinstance(node, ast.Call)
            arg = node.args[1]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                name = arg.value
        if name is not None and name in private:
            found.append(f"line {node.lineno}: .{name} (aiohttp private)")
    return found


def _is_attr_call(node: ast.AST) -> bool:
    """``getattr(x, name)``, ``setattr(x, name, v)`` or ``hasattr(x, name)``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return False
    return node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) >= 2


def modules_outside_transport() -> list[Path]:
    paths = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    return sorted(p for p in paths if not p.is_relative_to(TRANSPORT))


def test_no_module_outside_the_transport_reaches_into_aiohttp() -> None:
    private = aiohttp_private_names()
    breaches = {
        str(path.relative_to(ROOT)): found
        for path in modules_outside_transport()
        if (found := boundary_breaches(path.read_text(encoding="utf-8"), private))
    }
    assert breaches == {}


def test_the_check_covers_the_app_and_knows_the_private_names_once_used_there() -> None:
    checked = {str(p.relative_to(ROOT)) for p in modules_outside_transport()}
    assert {"server/app.py", "server/hub.py", "server/web.py", "bench/hotpath.py"} <= checked
    assert {"_req", "_reader", "_message_tail", "_payload_parser"} <= aiohttp_private_names()


def test_the_boundary_check_flags_private_imports_and_attributes() -> None:
    bad = (
        "import aiohttp._http_parser\n"
        "from aiohttp._websocket.reader import WebSocketReader\n"
        "from aiohttp.web import _run_app\n"
        "def peek(ws, handler, pool):\n"
        "    ws._reader.feed_data(b'')\n"
        "    tail = getattr(handler, '_message_tail', b'')\n"
        "    return self._reader, pool._processes, tail\n"
    )
    assert boundary_breaches(bad, frozenset({"_reader", "_message_tail"})) == [
        "line 1: import aiohttp._http_parser",
        "line 2: from aiohttp._websocket.reader import",
        "line 3: from aiohttp.web import _run_app",
        "line 5: ._reader (aiohttp private)",
        "line 6: ._message_tail (aiohttp private)",
    ]
    without_aiohttp = "def peek(ws):\n    return ws._reader\n"
    assert boundary_breaches(without_aiohttp, frozenset({"_reader"})) == []


# ---- import cycles ---------------------------------------------------------------
def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def server_imports(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """For each module, the modules of ``sources`` it imports (anywhere in the file)."""
    graph: dict[str, set[str]] = {}
    for module, source in sources.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets.add(node.module)
                targets |= {f"{node.module}.{alias.name}" for alias in node.names}
        graph[module] = {t for t in targets if t in sources and t != module}
    return graph


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (as a path that comes back to its start), or None."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module):], module]
        if module in done:
            return None
        for target in sorted(graph.get(module, ())):
            cycle = visit(target, [*path, module])
            if cycle is not None:
                return cycle
        done.add(module)
        return None

    for module in sorted(graph):
        cycle = visit(module, [])
        if cycle is not None:
            return cycle
    return None


def server_sources() -> dict[str, str]:
    return {
        module_name(p): p.read_text(encoding="utf-8") for p in (ROOT / "server").rglob("*.py")
    }


def test_server_modules_import_no_cycle_type_checking_imports_included() -> None:
    assert find_cycle(server_imports(server_sources())) is None


def test_the_transport_imports_nothing_of_the_domain_shell() -> None:
    graph = server_imports(server_sources())
    reached = {m: graph[m] & DOMAIN for m in graph if m.startswith("server.transport")}
    assert reached and all(not found for found in reached.values()), reached


def test_the_cycle_check_finds_a_circle_hidden_under_type_checking() -> None:
    sources = {
        "server.a": "from server.b import B\n",
        "server.b": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from server import a\n"
        ),
        "server": "",
    }
    assert find_cycle(server_imports(sources)) == ["server.a", "server.b", "server.a"]
    assert find_cycle(server_imports({"server.a": "import server.b\n", "server.b": ""})) is None
