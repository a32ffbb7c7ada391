"""The pure core stays pure: no event loop, no sockets, no database, no clock, no randomness.

Every module of the ``protocol`` package (found with pkgutil, so new modules
are covered the day they appear) and the pure race core in ``server/`` are
checked twice: a fresh interpreter imports the module and reports which
forbidden modules it pulled in, and an AST scan reads the source for
forbidden imports, including ones hidden in a function body.
"""

from __future__ import annotations

import ast
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import protocol
import server.race

ROOT = Path(__file__).resolve().parent.parent
FORBIDDEN = frozenset(
    {"asyncio", "aiohttp", "websockets", "textual", "socket", "time", "random", "sqlalchemy"}
)


def protocol_modules() -> list[str]:
    found = pkgutil.walk_packages(protocol.__path__, prefix="protocol.")
    return ["protocol", *sorted(info.name for info in found)]


def server_core_modules() -> list[str]:
    found = pkgutil.walk_packages(server.race.__path__, prefix="server.race.")
    return ["server.race", *sorted(info.name for info in found)]


def source_file(module: str) -> Path:
    path = ROOT.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


# Runs in a fresh interpreter.  ``time`` is loaded before any user code runs,
# so sys.modules alone cannot tell who wants it: a meta-path hook records, for
# every forbidden import, the file of the code that asked for it.
_PROBE = r"""
import importlib, json, sys
FORBIDDEN = set(json.loads(sys.argv[2]))
preloaded = {name for name in sys.modules if name.partition(".")[0] in FORBIDDEN}
for name in preloaded:
    del sys.modules[name]
asked = []

class Recorder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] in FORBIDDEN:
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename.startswith("<frozen"):
                frame = frame.f_back
            asked.append([name, frame.f_code.co_filename if frame else "?"])
        return None

sys.meta_path.insert(0, Recorder)
importlib.import_module(sys.argv[1])
loaded = sorted(n for n in sys.modules if n.partition(".")[0] in FORBIDDEN and n not in preloaded)
print(json.dumps({"loaded": loaded, "asked": asked}))
"""


def probe(module: str, extra_path: Path | None = None) -> tuple[list[str], list[tuple[str, str]]]:
    """Forbidden modules newly loaded, and (name, asking file) for each forbidden import."""
    env = dict(os.environ)
    if extra_path is not None:
        env["PYTHONPATH"] = str(extra_path)
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, module, json.dumps(sorted(FORBIDDEN))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    return report["loaded"], [(name, where) for name, where in report["asked"]]


def forbidden_imports_in_source(path: Path) -> list[str]:
    """Forbidden modules named by import statements or dynamic imports in ``path``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and _is_dynamic_import(node):
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names = [first.value]
        found += [
            f"line {getattr(node, 'lineno', 0)}: {n}"
            for n in names
            if n.partition(".")[0] in FORBIDDEN
        ]
    return found


def _is_dynamic_import(call: ast.Call) -> bool:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "__import__"
    return isinstance(func, ast.Attribute) and func.attr == "import_module"


def check_module(module: str) -> None:
    loaded, asked = probe(module)
    assert loaded == [], f"importing {module} loads {loaded}"
    # Imports made by the project's own files count; a library's own needs
    # (msgpack's datetime support loading ``time``) do not.
    ours = [(name, where) for name, where in asked if Path(where).is_relative_to(ROOT)]
    ours = [(n, w) for n, w in ours if ".venv" not in Path(w).relative_to(ROOT).parts]
    assert ours == [], f"project code imports forbidden modules: {ours}"
    assert forbidden_imports_in_source(source_file(module)) == []


@pytest.mark.parametrize("module", protocol_modules())
def test_protocol_module_imports_nothing_impure(module: str) -> None:
    check_module(module)


def test_every_protocol_module_is_checked() -> None:
    on_disk = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in (ROOT / "protocol").rglob("*.py")
    }
    assert on_disk == set(protocol_modules())
    assert {"protocol.rules.game", "protocol.deals.shuffle", "protocol.wire.codec"} <= on_disk


@pytest.mark.parametrize("module", server_core_modules())
def test_pure_race_core_imports_nothing_impure(module: str) -> None:
    check_module(module)


def test_the_checks_catch_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "impure.py"
    bad.write_text(
        "import os\nfrom time import monotonic\n"
        "def later():\n    import asyncio.events\n    return __import__('random')\n"
    )
    assert forbidden_imports_in_source(bad) == [
        "line 2: time",
        "line 4: asyncio.events",
        "line 5: random",
    ]
    (tmp_path / "clocky.py").write_text("import time\nimport random\n")
    loaded, asked = probe("clocky", extra_path=tmp_path)
    assert loaded == ["random"]
    assert ("time", str(tmp_path / "clocky.py")) in asked
    loaded, asked = probe("json.tool")
    assert loaded == [] and asked == []
    loaded, asked = probe("asyncio")
    assert "asyncio" in loaded and "socket" in loaded
