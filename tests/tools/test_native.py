"""The native build (tools/native.py) runs only with its own sources, and the same code
runs as pure Python without it.

``make test`` builds it first, so these tests see a fresh build; run alone on a
checkout without one, the tests that need it are skipped.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from protocol import native
from tools import native as build

ROOT = Path(__file__).resolve().parents[2]

needs_build = pytest.mark.skipif(
    build.status() != "fresh", reason="no fresh native build (make native)"
)


def _where(module: str, cwd: Path, **env: str) -> tuple[str, str]:
    """Where a fresh interpreter started in ``cwd`` loads ``module`` from, and its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", f"import {module} as m; print(m.__file__)"],
        cwd=cwd, env={**os.environ, **env, "PYTHONPATH": str(cwd)},
        capture_output=True, text=True, timeout=60, check=True,
    )
    return done.stdout.strip(), done.stderr


def test_the_module_list_names_real_sources_and_the_hot_path_shell() -> None:
    assert all(build.source(module).is_file() for module in build.MODULES)
    # The move's and the flush's fast paths, and the input log's journal.
    assert {"server.hub", "server.hub_flushes", "server.recovery.journal"} <= set(build.MODULES)
    # The solver, which the deal workers run, and the baseline bench.solver races it against.
    solver = {"protocol.deals.counting", "protocol.deals.depth_first", "protocol.deals.layered",
              "protocol.deals.solver"}
    assert solver <= set(build.MODULES)
    assert "server.transport.direct" not in build.MODULES  # a subclass of aiohttp's class
    # card_code answers wrongly typed input itself (CardError).
    assert "protocol.rules.cards" not in build.MODULES
    # The hand-written C twins: a .py definition and a .c file beside it, never also mypyc's.
    assert build.C_TWINS == ("protocol.deals.groups",)
    for module in build.C_TWINS:
        assert build.source(module).is_file() and build.twin_path(module).is_file()
        assert module not in build.MODULES


def test_make_rebuilds_when_a_c_twin_changes() -> None:
    # The Makefile's list of what the build depends on (tools.native sources).
    sources = set(subprocess.run(
        [sys.executable, "-m", "tools.native", "sources"], cwd=ROOT, capture_output=True,
        text=True, timeout=60, check=True,
    ).stdout.split())
    assert {"protocol/deals/groups.py", "protocol/deals/groups.c"} <= sources
    assert "protocol/deals/layered.py" in sources


@needs_build
def test_a_fresh_build_is_what_runs() -> None:
    for module in ("protocol.rules.game", "server.race.room", "server.reader",
                   "protocol.deals.groups", "bench.load_game"):
        path, err = _where(module, ROOT)
        assert path.endswith(".so"), (module, path)
        assert "stale" not in err
    cache_tag, digests = native.read_manifest()
    assert cache_tag == sys.implementation.cache_tag
    assert sorted(digests) == sorted((*build.MODULES, *build.C_TWINS))


def _layered_file() -> str:
    import protocol.deals.layered as layered

    return layered.__file__ or ""


@needs_build
def test_the_deal_workers_run_the_compiled_solver() -> None:
    # The server's own pool of deal workers (spawned, at idle priority).
    from server.app import make_executor

    workers = make_executor(1)
    try:
        assert workers.submit(_layered_file).result(timeout=60).endswith(".so")
    finally:
        workers.shutdown()


@needs_build
def test_pure_on_request_loads_every_module_from_source() -> None:
    for module in ("protocol.rules.game", "server.race.room", "server.reader",
                   "protocol.deals.groups"):
        path, err = _where(module, ROOT, TRIPEAKS_PURE="1")
        assert path.endswith(".py"), (module, path)
        assert err == ""


@needs_build
def test_an_edited_source_turns_the_whole_build_off_and_says_so(tmp_path: Path) -> None:
    """A copy of the tree with one compiled module edited: that module and every other
    compiled one load from source (they call each other directly when compiled)."""
    for package in ("protocol", "server", "bench"):
        shutil.copytree(ROOT / package, tmp_path / package)
    (tmp_path / "build" / "native").mkdir(parents=True)
    shutil.copy(native.MANIFEST, tmp_path / "build" / "native" / "manifest.txt")
    path, err = _where("server.race.room", tmp_path)
    assert path.endswith(".so") and err == "", path  # the copy is fresh: compiled modules run
    fast = tmp_path / "protocol/wire/fast.py"
    fast.write_text(fast.read_text() + "\n# edited\n")
    for module in ("protocol.wire.fast", "server.race.room"):
        path, err = _where(module, tmp_path)
        assert path == str(tmp_path / (module.replace(".", "/") + ".py")), path
        assert "native build is stale (protocol/wire/fast.py changed since the build)" in err


@needs_build
def test_an_edited_c_twin_turns_the_build_off_and_says_so(tmp_path: Path) -> None:
    """The manifest's digest of a module with a C twin covers the .c file too."""
    for package in ("protocol", "server", "bench"):
        shutil.copytree(ROOT / package, tmp_path / package)
    (tmp_path / "build" / "native").mkdir(parents=True)
    shutil.copy(native.MANIFEST, tmp_path / "build" / "native" / "manifest.txt")
    path, err = _where("protocol.deals.groups", tmp_path)
    assert path.endswith(".so") and err == "", path
    twin = tmp_path / "protocol/deals/groups.c"
    twin.write_text(twin.read_text() + "\n/* edited */\n")
    for module in ("protocol.deals.groups", "protocol.deals.layered"):
        path, err = _where(module, tmp_path)
        assert path == str(tmp_path / (module.replace(".", "/") + ".py")), path
        stale = "stale (protocol/deals/groups.py or groups.c changed since the build)"
        assert stale in err


@needs_build
def test_compiled_modules_without_a_manifest_do_not_run(tmp_path: Path) -> None:
    for package in ("protocol", "server", "bench"):
        shutil.copytree(ROOT / package, tmp_path / package)
    path, err = _where("protocol.wire.fast", tmp_path)
    assert path.endswith("fast.py"), path
    assert "compiled modules without build/native/manifest.txt" in err


def test_without_a_build_nothing_is_said(tmp_path: Path) -> None:
    for package in ("protocol", "server", "bench"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("*.so"))
    path, err = _where("server.race.room", tmp_path)
    assert path.endswith("room.py") and err == ""


def _tree_without_build(tmp_path: Path) -> Path:
    """A copy of the packages, the build tool and the mypy settings, nothing compiled."""
    for package in ("protocol", "server", "bench", "tools"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("*.so"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _build(
    tree: Path, *args: str, first: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -m tools.native build ARGS`` in ``tree`` (``first``: a folder of modules
    found before everything else)."""
    path = str(tree) if first is None else f"{first}{os.pathsep}{tree}"
    return subprocess.run(
        [sys.executable, "-m", "tools.native", "build", *args],
        cwd=tree, env={**os.environ, **env, "PYTHONPATH": path},
        capture_output=True, text=True, timeout=300, check=False,
    )


def _left_behind(tree: Path) -> list[str]:
    """What a build left besides its log: compiled modules, a manifest, C or objects (the
    C twins' own sources are not the build's)."""
    sources = {tree / build.twin_path(module).relative_to(ROOT) for module in build.C_TWINS}
    return sorted(
        str(path.relative_to(tree)) for path in tree.rglob("*")
        if path.is_file() and path.suffix in (".so", ".c", ".o", ".txt")
        and path != tree / "build" / "native" / "build.log" and path not in sources
    )


def test_a_build_without_a_c_compiler_says_so_and_leaves_pure_python(tmp_path: Path) -> None:
    """A machine without gcc: the build fails whole, says why, leaves nothing half built
    (so nothing stale is loaded), and the same modules run from source, silently."""
    tree = _tree_without_build(tmp_path)
    done = _build(tree, "--strict", CC="false")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "native build FAILED (the pure-Python modules run instead, slower)" in done.stderr
    assert "full log: " in done.stderr
    assert _left_behind(tree) == []
    assert "returned non-zero exit status" in (tree / "build/native/build.log").read_text()
    path, err = _where("server.race.room", tree)
    assert path == str(tree / "server/race/room.py") and err == ""


def test_a_build_without_mypyc_fails_only_when_asked_to_be_strict(tmp_path: Path) -> None:
    """``make run`` builds without ``--strict``: a failed build must not stop the server."""
    tree = _tree_without_build(tmp_path)
    shadow = tmp_path / "shadow" / "mypyc"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no mypyc here')\n")
    lenient = _build(tree, first=shadow.parent)
    assert lenient.returncode == 0 and "native build FAILED" in lenient.stderr
    assert "no mypyc here" in lenient.stderr
    strict = _build(tree, "--strict", first=shadow.parent)
    assert strict.returncode == 1 and "native build FAILED" in strict.stderr
    assert _left_behind(tree) == []


@needs_build
def test_the_fast_path_tests_pass_on_the_pure_modules_too() -> None:
    """The compiled modules are what the suite runs; their source is the fallback, so
    the fast path's equivalence tests run on it as well."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/server/test_fastpath.py", "tests/protocol/rules"],
        cwd=ROOT, env={**os.environ, "TRIPEAKS_PURE": "1"},
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout
