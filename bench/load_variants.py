"""Experiments: the real server with named hot-path changes patched in.

``BENCH_LOAD_SERVER_MODULE=bench.load_variants BENCH_VARIANT=pool_idle,gc_tuned
python -m bench.load ...`` runs ``tripeaks-server`` with only those changes, so
that docs/performance.md can say what each recommended change buys before
anyone edits the server.  The patches reach into server internals on purpose
and may need updating when those change; nothing but the benchmark uses them.

Variants:

- ``pool_idle``: deal-pool workers run under ``SCHED_IDLE`` (CPU only when the
  event loop does not want it);
- ``no_metrics``: the per-frame and per-move Prometheus updates become no-ops;
- ``gc_tuned``: ``gc.set_threshold(50_000, 50, 1000)``;
- ``no_gc``: the cyclic garbage collector is off (an upper bound, not a fix);
- ``gc_log``: every collection of generation 1 or 2, and every one over 5 ms, is
  written to stderr with its duration (kept with ``BENCH_LOAD_KEEP_LOG=1``);
- ``cprofile``: the server runs under :mod:`cProfile`, its statistics written at exit
  to ``$BENCH_PROFILE_DIR/server-PID.prof`` (default: the working directory); the
  profiler slows every call, so read shares, not times.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from typing import Any


def idle_priority() -> None:
    """Pool initializer: this process only gets CPU nobody else wants."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        os.nice(19)


class _NoOp:
    def inc(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def observe(self, *_args: Any, **_kwargs: Any) -> None:
        pass

    def labels(self, *_args: Any, **_kwargs: Any) -> _NoOp:
        return self


def apply(variants: set[str]) -> None:
    """Patch the server modules for ``variants``; unknown names are an error."""
    known = {"pool_idle", "no_metrics", "gc_tuned", "no_gc", "gc_log", "cprofile"}
    if variants - known:
        raise SystemExit(f"unknown variants {sorted(variants - known)}; known: {sorted(known)}")
    import server.app as app  # imported here: the patches must precede create_app()
    import server.metrics as metrics

    if "pool_idle" in variants:
        original = app.make_executor

        def make_executor(workers: int, **kwargs: Any) -> Any:
            executor = original(workers, **kwargs)
            # Workers are spawned lazily with the pool's stored initializer.
            executor._initializer = idle_priority
            executor._initargs = ()
            return executor

        app.make_executor = make_executor
    if "no_metrics" in variants:
        init = metrics.Metrics.__init__

        def quiet_init(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            for name in ("frames_sent", "moves", "move_seconds", "rejected_moves"):
                setattr(self, name, _NoOp())

        metrics.Metrics.__init__ = quiet_init  # type: ignore[method-assign]
    if "gc_tuned" in variants:
        gc.set_threshold(50_000, 50, 1000)
    if "no_gc" in variants:
        gc.disable()
    if "gc_log" in variants:
        gc.callbacks.append(_log_collection)


_started = [0.0]


def _log_collection(phase: str, info: dict[str, int]) -> None:
    now = time.perf_counter()
    if phase == "start":
        _started[0] = now
        return
    ms = (now - _started[0]) * 1000
    if info["generation"] or ms > 5:
        print(f"gc gen {info['generation']} {ms:.1f} ms collected {info['collected']}",
              file=sys.stderr, flush=True)


def main() -> int:
    """Apply ``$BENCH_VARIANT`` and run the server with the remaining arguments."""
    variants = set(filter(None, os.environ.get("BENCH_VARIANT", "").split(",")))
    apply(variants)
    from server.__main__ import main as server_main

    print(f"server variant: {sorted(variants) or 'unchanged'}", file=sys.stderr, flush=True)
    if "cprofile" not in variants:
        return server_main(sys.argv[1:])
    import cProfile

    profile = cProfile.Profile()
    try:
        return profile.runcall(server_main, sys.argv[1:])
    finally:
        where = os.environ.get("BENCH_PROFILE_DIR", ".")
        profile.dump_stats(os.path.join(where, f"server-{os.getpid()}.prof"))


if __name__ == "__main__":
    sys.exit(main())
