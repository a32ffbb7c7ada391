"""The native build: the server's hot path compiled with mypyc, in place (``make native``).

mypyc (shipped with mypy) turns type-annotated modules into C extension modules
that run the same code without the interpreter's dispatch: attribute reads of
compiled classes become struct reads and calls between compiled functions direct
C calls.  Measured on the hot path (docs/performance.md): a move and a progress
flush each cost about 35% less CPU.  The code stays the project's
Python; only the modules of :data:`MODULES` are compiled, each into
``<module>.cpython-311-<platform>.so`` beside its source, with their shared
runtime in ``server/native__mypyc...so``.  Python prefers such a file to the
source, so nothing else changes: without a build the same modules run as Python.

One module is also written in C by hand (:data:`C_TWINS`): ``protocol/deals/groups.c``
beside ``groups.py``, the layered search's inner loops on fixed-width words.  It is
compiled by the same setup, for CPython 3.11 whose integers it reads; the ``.py`` file
stays the definition, which the tests hold the C to.

The build writes ``build/native/manifest.txt`` last (each module and the SHA-256
of the source compiled); :mod:`protocol.native` refuses to load a build whose
sources changed since.

    python -m tools.native build [--strict]   # compile (about a minute on 2 cores)
    python -m tools.native clean              # remove every compiled module
    python -m tools.native status             # fresh, stale or none
    python -m tools.native sources            # the compiled sources (for make)

Without a C compiler or mypyc, ``build`` says so and leaves the pure-Python
modules to run (``--strict``, as ``make test`` uses, fails instead).

What mypyc asks of the code: no generic dataclasses (plain classes with
``__slots__`` instead), no compiled subclass of a library's Python class (so
``server/transport/direct.py`` stays Python), explicit types on module constants
that mypy infers across an import cycle and on a ``Final`` tuple (inferred, it was
never set: ``NameError``), arguments and attributes only of their declared types
(compiled code checks them), and no replacing of a compiled class's methods.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

from protocol.native import (
    MANIFEST,
    PACKAGES,
    ROOT,
    compiled_on_disk,
    module_digest,
    stale_modules,
    twin_path,
    write_manifest,
)
from protocol.native import source_path as source

BUILD_TEMP: Final = ROOT / "build" / "native" / "tmp"
#: The shared runtime's module (``server/native__mypyc...so``).
GROUP: Final = "server.native"

#: The hot path: its pure core (the layout and the engine, the fast codec, the race and
#: room reducers and their small value types, the spectators' boards, the input log's
#: encoding), its transport (the connection's writes, the reads cut into frames, the frame
#: reader) and the shell between them (the hub's move and flush fast paths, the flushes'
#: slots, the journal).
#: A compiled class's methods cannot be replaced, so the tests put failures in through
#: what these modules are given (the input log, a room's state), never by patching them.
#: The exact solver (the counting rule, the depth-first probes, the layered search and
#: the solver around them) is compiled too: the deal workers run it beside the server, for
#: the prepared pool, for a start that finds the pool empty and for every race's par.  Its
#: work is mostly arithmetic on integers of hundreds of bits, which stays CPython's, so it
#: gains less than the hot path (the dealer's p99 about 12%, performance.md).  The plain
#: depth-first baseline that ``bench.solver`` races it against (``dfs_baseline``) lives in
#: ``solver.py`` and so is compiled alike: the speed-up it reports is the algorithm's.
#: ``protocol/rules/cards.py`` stays Python: compiled, ``card_code`` would raise
#: ``TypeError`` for a value of the wrong type before its own check (``CardError``).
#: The load generator's per-frame modules (``bench.load_wire``, ``bench.load_stats``,
#: ``bench.load_game``) are compiled too: a generator driving 10,000 players from one
#: core took 88-92% of it as Python and its own delays then counted in the round trips;
#: compiled, 72-80% (performance.md).  The echo baseline uses the same client.
MODULES: Final = (
    "protocol.rules.layout",
    "protocol.rules.game",
    "protocol.wire.fast",
    "server.race.race",
    "server.race.room",
    "server.race.room_types",
    "server.race.race_cycle",
    "server.race.progress",
    "server.race.progress_flush",
    "server.race.spectate",
    "server.race.ratelimit",
    "server.race.lobby",
    "server.recovery.codec",
    "server.transport.connection",
    "server.transport.framing",
    "server.transport.splitter",
    "server.reader",
    "server.hub",
    "server.hub_flushes",
    "server.hub_rooms",
    "server.metrics_hot",
    "server.recovery.journal",
    "server.recovery.log",
    "bench.load_wire",
    "bench.load_stats",
    "bench.load_game",
    "protocol.deals.counting",
    "protocol.deals.depth_first",
    "protocol.deals.layered",
    "protocol.deals.solver",
)

#: Modules with a C twin written by hand (``<module>.c`` beside ``<module>.py``, which
#: stays the definition and what runs without a build): the layered search's inner loops,
#: its set operations on groups of masks and the counting rule's test of them, whose work
#: is arithmetic on sets of 1,024 bits and packed sums of 400 bits that mypyc leaves to
#: CPython's integers.  On fixed-width words the dealer's slow candidates take about a
#: third less time (performance.md).
C_TWINS: Final = ("protocol.deals.groups",)


def compiled_files() -> list[Path]:
    """Every extension module in the project's packages."""
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.so"))


def clean() -> int:
    """Remove every compiled module, the manifest and the build's intermediates; how many
    compiled modules went."""
    files = compiled_files()
    for path in files:
        path.unlink()
    MANIFEST.unlink(missing_ok=True)
    _remove_intermediates()
    return len(files)


def status() -> str:
    """``fresh``, ``stale: why`` or ``none``, as :func:`protocol.native.stale_modules` sees
    it (``TRIPEAKS_PURE=1`` counts as stale)."""
    if not MANIFEST.exists() and not compiled_on_disk():
        return "none"
    stale, why = stale_modules()
    return f"stale: {why}" if stale else "fresh"


_SETUP = """
import sys
from mypyc.build import mypycify
from setuptools import Extension, setup
paths, group, temp, jobs = sys.argv[1].split(","), sys.argv[2], sys.argv[3], sys.argv[4]
twins = [
    Extension(name, [c_file], extra_compile_args=["-O3", "-Wall", "-Werror"])
    for name, c_file in (twin.split("=") for twin in sys.argv[5].split(",") if twin)
]
setup(
    name="tripeaks-native",
    ext_modules=mypycify(paths, opt_level="3", group_name=group) + twins,
    script_args=["build_ext", "--inplace", "--build-temp", temp, "--parallel", jobs],
)
"""


def build(strict: bool) -> int:
    """Compile :data:`MODULES`; 0 on success (or on failure without ``strict``)."""
    removed = clean()
    digests = {module: module_digest(module) for module in (*MODULES, *C_TWINS)}
    paths = [str(source(module).relative_to(ROOT)) for module in MODULES]
    # The C twins read CPython 3.11's integers; elsewhere their Python definitions run.
    twins = [
        f"{module}={twin_path(module).relative_to(ROOT)}"
        for module in C_TWINS
        if sys.version_info[:2] == (3, 11)
    ]
    jobs = str(max(1, os.cpu_count() or 1))
    print(
        f"native build: compiling {len(MODULES)} modules with mypyc and {len(twins)} C twin "
        f"on {jobs} cores "
        f"(about a minute){f'; removed {removed} old files' if removed else ''}",
        flush=True,
    )
    began = time.monotonic()
    BUILD_TEMP.mkdir(parents=True, exist_ok=True)
    log = BUILD_TEMP.parent / "build.log"
    with log.open("w") as out:
        done = subprocess.run(
            [
                sys.executable, "-c", _SETUP, ",".join(paths), GROUP, str(BUILD_TEMP), jobs,
                ",".join(twins),
            ],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=False,
        )
    if done.returncode != 0:
        clean()
        tail = log.read_text().strip().splitlines()[-15:]
        print("native build FAILED (the pure-Python modules run instead, slower):", file=sys.stderr)
        print("\n".join("  " + line for line in tail), file=sys.stderr)
        print(f"  full log: {log}", file=sys.stderr)
        return 1 if strict else 0
    _remove_intermediates()
    write_manifest(digests)
    print(
        f"native build: {len(compiled_files())} extension modules in "
        f"{time.monotonic() - began:.0f} s; {MANIFEST.relative_to(ROOT)} written",
        flush=True,
    )
    return 0


def _remove_intermediates() -> None:
    """Remove what mypyc and setuptools leave under ``build/`` besides the log and the
    manifest (C sources, objects, mypyc's IR listing): not needed to run."""
    build_dir = ROOT / "build"
    shutil.rmtree(BUILD_TEMP, ignore_errors=True)
    for package in PACKAGES:
        shutil.rmtree(build_dir / package, ignore_errors=True)
    for generated in (*build_dir.glob("__native*"), *build_dir.glob("lib.*")):
        if generated.is_dir():
            shutil.rmtree(generated, ignore_errors=True)
        else:
            generated.unlink(missing_ok=True)
    (build_dir / "ops.txt").unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.native", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("command", choices=("build", "clean", "status", "sources"))
    parser.add_argument("--strict", action="store_true", help="fail when the build fails")
    args = parser.parse_args(argv)
    if args.command == "build":
        return build(args.strict)
    if args.command == "clean":
        print(f"native build: removed {clean()} compiled modules")
        return 0
    if args.command == "status":
        print(status())
        return 0
    files = [source(module) for module in (*MODULES, *C_TWINS)]
    files += [twin_path(module) for module in C_TWINS]
    print(" ".join(str(path.relative_to(ROOT)) for path in files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
