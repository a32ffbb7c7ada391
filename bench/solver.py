"""Solver and dealer benchmark (``make bench-solver``; figures in docs/performance.md).

For each rule set it decides the same random, unfiltered shuffles (candidate 0
of seeds ``PREFIX-0``, ``PREFIX-1``, ...) with the solver, and the first
``--baseline-deals`` of them with the plain depth-first search with a visited
set, in the same run; then it times the dealer on fresh seeds and par on
winnable deals.  Everything runs in this one process, one deal at a time, so
per-deal times are not shared between deals.  Wall-clock and CPU times are both
recorded: the machine is shared, and CPU time is what other people's load
disturbs least.  Last, the dealer's seeds are dealt as a start that finds no
deal ready deals them: in two worker processes, hedged
(``server.hub_deals.first_dealt``), wall clock only.

    python -m bench.solver                  # the full run, a few minutes
    python -m bench.solver --deals 100 --baseline-deals 20 --dealer-seeds 20 --par-deals 20
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from bench._timing import machine, p99_interval_ms, summary_ms, timed
from client_cli.deal_commands import wilson_interval
from protocol.deals.dealer import Difficulty, deal_for_seed
from protocol.deals.shuffle import candidate_deal
from protocol.deals.solver import dfs_baseline, par_of, solve
from protocol.rules.game import Deal, Rules
from server.dealpool import deal_now
from server.hub_deals import first_dealt

RESULTS = Path(__file__).parent / "results" / "solver.json"

#: Reference winnable shares from docs/rules.md: (share, 95% half-width), in percent.
REFERENCE = {
    "wrap": (96.9, 0.24),
    "no-wrap": (73.7, 0.6),
    "empty-waste+wrap": (99.1, 0.13),
    "empty-waste+no-wrap": (89.0, 0.4),
}
RULE_SETS = {
    "wrap": Rules(wrap=True, empty_waste=False),
    "no-wrap": Rules(wrap=False, empty_waste=False),
    "empty-waste+wrap": Rules(wrap=True, empty_waste=True),
    "empty-waste+no-wrap": Rules(wrap=False, empty_waste=True),
}


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.solver", description=__doc__)
    parser.add_argument("--deals", type=int, default=1000, help="shuffles per rule set")
    parser.add_argument(
        "--baseline-deals", type=int, default=150, help="of those, how many the baseline decides"
    )
    parser.add_argument(
        "--dealer-seeds",
        type=int,
        default=1000,
        help="fresh seeds for the dealer (from 368 on, its p99 has an upper 95%% bound)",
    )
    parser.add_argument("--par-deals", type=int, default=200, help="winnable deals for par")
    parser.add_argument(
        "--hedge-ms", type=int, default=10, help="a start's second seed after (the server's 10)"
    )
    parser.add_argument(
        "--rules",
        default="wrap,no-wrap,empty-waste+wrap",
        help=f"comma-separated rule sets from {', '.join(RULE_SETS)}",
    )
    parser.add_argument("--seed-prefix", default="bench", help="seeds are PREFIX-0, PREFIX-1, ...")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where to write the JSON")
    return parser.parse_args(argv)


def _deals(prefix: str, count: int, rules: Rules) -> list[Deal]:
    return [candidate_deal(f"{prefix}-{i}", 0, rules) for i in range(count)]


def bench_rule_set(
    name: str, deals: list[Deal], baseline_count: int
) -> tuple[dict[str, Any], list[bool]]:
    """Solver over all ``deals``, baseline over the first ``baseline_count``; and the verdicts."""
    walls, cpus, verdicts = [], [], []
    for index, deal in enumerate(deals):
        result, took = timed(partial(solve, deal))
        walls.append(took.wall)
        cpus.append(took.cpu)
        verdicts.append(result.winnable)
        _progress(f"{name}: solver", index + 1, len(deals))
    base_walls, base_cpus = [], []
    for index, deal in enumerate(deals[:baseline_count]):
        result, took = timed(partial(dfs_baseline, deal))
        if result.winnable != verdicts[index]:
            sys.exit(f"{name}: baseline and solver disagree on deal {index}")
        base_walls.append(took.wall)
        base_cpus.append(took.cpu)
        _progress(f"{name}: baseline", index + 1, baseline_count)
    wins = sum(verdicts)
    low, high = wilson_interval(wins, len(deals))
    same_walls, same_cpus = walls[:baseline_count], cpus[:baseline_count]
    ref_share, ref_half = REFERENCE[name]
    figures = {
        "deals": len(deals),
        "winnable": wins,
        "winnable_pct": 100 * wins / len(deals),
        "winnable_interval95_pct": [100 * low, 100 * high],
        "reference_pct": [ref_share - ref_half, ref_share + ref_half],
        "reference_inside_our_interval": 100 * low <= ref_share <= 100 * high,
        "deals_per_s_wall": len(deals) / sum(walls),
        "deals_per_s_cpu": len(deals) / sum(cpus),
        # deal index i is candidate 0 of seed PREFIX-i: re-time these to check outliers
        "slowest_cpu_ms": sorted(
            ([i, round(1000 * t, 1)] for i, t in enumerate(cpus)), key=lambda it: -it[1]
        )[:5],
        "wall": summary_ms(walls),
        "cpu": summary_ms(cpus),
        "baseline": {
            "deals": baseline_count,
            "wall": summary_ms(base_walls),
            "cpu": summary_ms(base_cpus),
            "solver_on_same_deals_wall": summary_ms(same_walls),
            "solver_on_same_deals_cpu": summary_ms(same_cpus),
            "speedup_mean_wall": sum(base_walls) / sum(same_walls),
            "speedup_mean_cpu": sum(base_cpus) / sum(same_cpus),
        },
    }
    return figures, verdicts


def bench_dealer(prefix: str, seeds: int, rules: Rules) -> dict[str, Any]:
    """Time from a fresh seed to a winnable deal and its winning line (no par)."""
    walls, cpus, candidates = [], [], []
    for index in range(seeds):
        seed = f"{prefix}-dealer-{index}"
        dealt, took = timed(partial(deal_for_seed, seed, rules, with_par=False))
        walls.append(took.wall)
        cpus.append(took.cpu)
        candidates.append(dealt.candidate)
        _progress("dealer", index + 1, seeds)
    return {
        "seeds": seeds,
        "wall": summary_ms(walls),
        "cpu": summary_ms(cpus),
        # the p99 of all seeds lies in these with 95% confidence (null: too few seeds)
        "p99_interval95_wall_ms": p99_interval_ms(walls),
        "p99_interval95_cpu_ms": p99_interval_ms(cpus),
        "seeds_needing_a_later_candidate": sum(1 for c in candidates if c > 0),
        "over_20_ms_cpu": sum(1 for t in cpus if t > 0.020),
        # seed PREFIX-dealer-i, its CPU time and the candidate dealt: the tail to re-time
        "slowest_cpu_ms": sorted(
            ([i, round(1000 * t, 1), candidates[i]] for i, t in enumerate(cpus)),
            key=lambda it: -it[1],
        )[:8],
    }


def bench_start_dealing(prefix: str, seeds: int, rules: Rules, hedge_ms: int) -> dict[str, Any]:
    """A start with the pool empty, on the dealer's seeds: dealt in 2 worker processes,
    a second seed beside a seed not dealt within ``hedge_ms``; each start waits for its
    spare deal before the next begins, so every start finds both workers free."""

    async def run(pool: concurrent.futures.Executor) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        walls: list[float] = []
        hedged = own_taken = 0
        await loop.run_in_executor(pool, deal_now, f"{prefix}-warm", rules, Difficulty.ANY)
        for index in range(seeds):
            seed = f"{prefix}-dealer-{index}"
            spare: asyncio.Future[object] = loop.create_future()
            drawn: list[str] = []

            def spare_seed(index: int = index, drawn: list[str] = drawn) -> str:
                drawn.append(f"{prefix}-spare-{index}")
                return drawn[-1]

            started = time.perf_counter()
            dealt = await first_dealt(
                loop,
                pool,
                seed,
                rules,
                Difficulty.ANY,
                hedge_after_s=hedge_ms / 1000,
                spare_seed=spare_seed,
                keep=spare.set_result,
            )
            walls.append(time.perf_counter() - started)
            if drawn:  # the deal not taken still runs: the next start must find both free
                await spare
                hedged += 1
                own_taken += dealt.seed == seed
            _progress("start dealing", index + 1, seeds)
        return {
            "seeds": seeds,
            "hedge_ms": hedge_ms,
            "workers": 2,
            "wall": summary_ms(walls),
            "p99_interval95_wall_ms": p99_interval_ms(walls),
            "hedged": hedged,
            "hedged_own_seed_taken": own_taken,
            "over_20_ms_wall": sum(1 for t in walls if t > 0.020),
        }

    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        return asyncio.run(run(pool))


def bench_par(deals: list[Deal], verdicts: list[bool], count: int) -> dict[str, Any]:
    """Time to compute par of winnable deals."""
    winnable = [deal for deal, won in zip(deals, verdicts, strict=True) if won][:count]
    walls, cpus, pars = [], [], []
    for index, deal in enumerate(winnable):
        (par, _), took = timed(partial(par_of, deal))
        walls.append(took.wall)
        cpus.append(took.cpu)
        pars.append(par)
        _progress("par", index + 1, len(winnable))
    return {
        "deals": len(winnable),
        "wall": summary_ms(walls),
        "cpu": summary_ms(cpus),
        "par_min": min(pars),
        "par_median": sorted(pars)[len(pars) // 2],
        "par_max": max(pars),
    }


def _progress(label: str, done: int, total: int) -> None:
    if done == total or done % 25 == 0:
        end = "\n" if done == total else ""
        print(f"\r{label}: {done}/{total}", end=end, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the figures and write them as JSON."""
    args = _parse(argv)
    names = [name.strip() for name in args.rules.split(",") if name.strip()]
    unknown = [name for name in names if name not in RULE_SETS]
    if unknown:
        sys.exit(f"unknown rule sets: {', '.join(unknown)}")
    started = time.time()
    shown = sys.argv[1:] if argv is None else argv
    command = " ".join(["python -m bench.solver", *shown])
    report: dict[str, Any] = {"machine": machine(), "command": command, "rules": {}}
    wrap_deals: list[Deal] = []
    wrap_verdicts: list[bool] = []
    for name in names:
        deals = _deals(args.seed_prefix, args.deals, RULE_SETS[name])
        figures, verdicts = bench_rule_set(name, deals, min(args.baseline_deals, len(deals)))
        report["rules"][name] = figures
        _print_rule_set(name, figures)
        if name == "wrap":
            wrap_deals, wrap_verdicts = deals, verdicts
    report["dealer"] = bench_dealer(args.seed_prefix, args.dealer_seeds, Rules())
    report["start_dealing"] = bench_start_dealing(
        args.seed_prefix, args.dealer_seeds, Rules(), args.hedge_ms
    )
    if wrap_deals:
        report["par"] = bench_par(wrap_deals, wrap_verdicts, args.par_deals)
    report["seconds"] = time.time() - started
    report["load_average_after"] = machine()["load_average"]
    _print_tail(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"figures written to {args.out}")
    return 0


def _line(label: str, figures: dict[str, float]) -> str:
    return (
        f"  {label:<26} mean {figures['mean_ms']:8.2f} ms  median {figures['median_ms']:7.2f} ms"
        f"  p99 {figures['p99_ms']:8.1f} ms  max {figures['max_ms']:8.1f} ms"
    )


def _print_rule_set(name: str, figures: dict[str, Any]) -> None:
    low, high = figures["winnable_interval95_pct"]
    ref_low, ref_high = figures["reference_pct"]
    base = figures["baseline"]
    print(
        f"{name}: {figures['deals']} deals, {figures['deals_per_s_wall']:.1f} deals/s (wall),"
        f" {figures['deals_per_s_cpu']:.1f} deals/s (cpu)"
    )
    print(
        f"  winnable {figures['winnable_pct']:.1f}% (95% interval {low:.1f}% to {high:.1f}%);"
        f" reference {ref_low:.2f}% to {ref_high:.2f}%"
    )
    print(_line("solver, wall", figures["wall"]))
    print(_line("solver, cpu", figures["cpu"]))
    print(f"  baseline on the first {base['deals']} deals:")
    print(_line("plain DFS, wall", base["wall"]))
    print(_line("solver same deals, wall", base["solver_on_same_deals_wall"]))
    print(_line("plain DFS, cpu", base["cpu"]))
    print(_line("solver same deals, cpu", base["solver_on_same_deals_cpu"]))
    print(
        f"  speed-up of the mean: {base['speedup_mean_wall']:.1f}x wall,"
        f" {base['speedup_mean_cpu']:.1f}x cpu"
    )


def _interval(bounds: list[float | None]) -> str:
    """A p99's 95% interval as printed: an open side reads "?" (too few values)."""
    low, high = (("?" if b is None else f"{b:.1f}") for b in bounds)
    return f"(95% interval {low} to {high} ms)"


def _print_tail(report: dict[str, Any]) -> None:
    dealer = report["dealer"]
    print(f"dealer (wrap on, {dealer['seeds']} fresh seeds, deal + winning line):")
    for kind in ("wall", "cpu"):
        figures, interval = dealer[kind], _interval(dealer[f"p99_interval95_{kind}_ms"])
        print(
            f"  {kind}: p50 {figures['median_ms']:.1f} ms  p99 {figures['p99_ms']:.1f} ms"
            f" {interval}  max {figures['max_ms']:.1f} ms"
        )
    slowest = ", ".join(f"{i} ({ms} ms, candidate {c})" for i, ms, c in dealer["slowest_cpu_ms"])
    print(f"  {dealer['over_20_ms_cpu']} seeds over 20 ms of CPU; slowest seeds: {slowest}")
    start = report["start_dealing"]
    print(
        f"start with the pool empty (same seeds, {start['workers']} workers, second seed after"
        f" {start['hedge_ms']} ms): p50 {start['wall']['median_ms']:.1f} ms"
        f"  p99 {start['wall']['p99_ms']:.1f} ms {_interval(start['p99_interval95_wall_ms'])}"
        f"  max {start['wall']['max_ms']:.1f} ms (wall);"
        f" {start['hedged']} hedged ({start['hedged_own_seed_taken']} still took their own seed),"
        f" {start['over_20_ms_wall']} over 20 ms"
    )
    if "par" in report:
        par = report["par"]
        print(
            f"par (wrap on, {par['deals']} winnable deals; par {par['par_min']}..{par['par_max']}):"
        )
        for kind in ("wall", "cpu"):
            print(
                f"  {kind}: p50 {par[kind]['median_ms']:.1f} ms  p99 {par[kind]['p99_ms']:.1f} ms"
                f"  max {par[kind]['max_ms']:.1f} ms"
            )
    before, after = report["machine"]["load_average"], report["load_average_after"]
    print(f"load average before {before}, after {after}")
    print(f"total {report['seconds']:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
