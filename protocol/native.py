"""Keeps a stale native build from running: compiled modules only with their own source.

``make native`` (``tools/native.py``) compiles the server's hot path with mypyc
into extension modules beside their sources (``server/race/room.cpython-311-...so``
beside ``server/race/room.py``); Python imports such a module in place of the
source.  The build writes ``build/native/manifest.txt``: the interpreter it was
built for, then each compiled module and the SHA-256 of the source it was compiled
from (with its C twin, for a module also written in C: :func:`twin_path`).  The
compiled modules call each other directly, not through Python, so they run as one
build or not at all: when any source differs from its digest (edited, or another
commit checked out), or the manifest is missing while extension modules are there,
:func:`guard` puts a finder first on ``sys.meta_path`` that loads every project
module from its source, and says so once on stderr.  ``TRIPEAKS_PURE=1`` does the
same without a word (the tests of the pure-Python fallback use it).

Called when the ``protocol``, ``server`` and ``bench`` packages are imported, before
any of their modules; the check costs one read of each compiled module's source.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Final

#: The folder holding the ``protocol`` and ``server`` packages.
ROOT: Final = Path(__file__).resolve().parent.parent
#: What the last native build compiled (written by ``tools/native.py``).
MANIFEST: Final = ROOT / "build" / "native" / "manifest.txt"
#: Set to ``1``: run the pure-Python modules even when a fresh build is there.
PURE_ENV: Final = "TRIPEAKS_PURE"
#: The packages whose modules may be compiled (``bench``: the load generator's).
PACKAGES: Final = ("protocol", "server", "bench")


class SourceOnly:
    """Finds ``names`` as their ``.py`` files, never as a compiled module (a meta path
    finder; not derived from ``importlib.abc``, whose import pulls in ``random``)."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in self.names:
            return None
        source = source_path(fullname)
        if source.is_file():
            return importlib.util.spec_from_file_location(fullname, source)
        return None


def source_path(module: str) -> Path:
    """The ``.py`` file of project ``module``."""
    return ROOT.joinpath(*module.split(".")).with_suffix(".py")


def digest(path: Path) -> str:
    """The SHA-256 of ``path``'s bytes, in hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def twin_path(module: str) -> Path:
    """The hand-written C file of project ``module`` (``counting_groups.c`` beside
    ``counting_groups.py``), compiled in its place by the native build when it exists."""
    return source_path(module).with_suffix(".c")


def module_digest(module: str) -> str:
    """The SHA-256 of what ``module`` is built from: its source and, for a module with a C
    twin, the twin too (a change to either makes the build stale)."""
    source = source_path(module)
    twin = twin_path(module)
    if not twin.is_file():
        return digest(source)
    return hashlib.sha256(source.read_bytes() + b"\0" + twin.read_bytes()).hexdigest()


def compiled_on_disk() -> frozenset[str]:
    """Every project module with an extension module beside its source."""
    found = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.so"):
            name = path.name.split(".", 1)[0]
            module = ".".join((*path.parent.relative_to(ROOT).parts, name))
            if source_path(module).is_file():
                found.add(module)
    return frozenset(found)


def write_manifest(digests: dict[str, str]) -> None:
    """Record a build of ``digests`` (module: SHA-256 of its source) for this interpreter."""
    lines = [f"cache_tag {sys.implementation.cache_tag}"]
    lines += [f"{wanted} {module}" for module, wanted in sorted(digests.items())]
    MANIFEST.write_text("\n".join(lines) + "\n")


def read_manifest() -> tuple[str, dict[str, str]]:
    """The interpreter the build was made for and its modules' digests (``OSError`` when
    there is no manifest, ``ValueError`` when it is not one)."""
    first, *rest = MANIFEST.read_text().splitlines() or [""]
    key, _, cache_tag = first.partition(" ")
    if key != "cache_tag":
        raise ValueError("no cache_tag line")
    digests = {}
    for line in rest:
        wanted, _, module = line.partition(" ")
        if len(wanted) != 64 or not module:
            raise ValueError(f"not a digest and a module: {line!r}")
        digests[module] = wanted
    return cache_tag, digests


def stale_modules() -> tuple[frozenset[str], str]:
    """The modules to load from source, and why (none when the build may run, or there
    is none)."""
    if os.environ.get(PURE_ENV) == "1":
        return compiled_on_disk(), f"{PURE_ENV}=1"
    try:
        cache_tag, modules = read_manifest()
    except FileNotFoundError:
        return compiled_on_disk(), "compiled modules without build/native/manifest.txt"
    except (OSError, ValueError):
        return compiled_on_disk(), "build/native/manifest.txt unreadable"
    if cache_tag != sys.implementation.cache_tag:
        return frozenset(modules), f"built for {cache_tag}"
    for module, wanted in sorted(modules.items()):
        source = source_path(module)
        if not source.is_file() or module_digest(module) != wanted:
            what = str(source.relative_to(ROOT))
            if twin_path(module).is_file():
                what += f" or {twin_path(module).name}"
            return frozenset(modules), f"{what} changed since the build"
    return frozenset(), ""


_checked = False


def guard() -> None:
    """Once per process: load every project module from source if the build is stale."""
    global _checked
    if _checked:
        return
    _checked = True
    names, why = stale_modules()
    if not names:
        return
    sys.meta_path.insert(0, SourceOnly(names))
    if os.environ.get(PURE_ENV) != "1":
        sys.stderr.write(
            f"tripeaks: the native build is stale ({why}); running pure Python, "
            "slower (make native rebuilds it)\n"
        )
