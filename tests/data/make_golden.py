"""Regenerate ``golden_deals.jsonl``: deals with known solvability for every rule set.

Run ``python tests/data/make_golden.py`` from the repository root.  Each deal is
decided twice, by the solver and by the plain depth-first search with a
visited set (``dfs_baseline``), and kept only when both agree; par is checked
by showing a win with ``par`` draws and none with ``par - 1``.  (The file
in the repository was also checked against an earlier, independent
implementation: a depth-first search lowering a draw limit.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from protocol.deals.shuffle import candidate_deal
from protocol.deals.solver import dfs_baseline, solve, wins_within
from protocol.rules.game import Rules

RULE_SETS = (
    Rules(wrap=True, empty_waste=False),
    Rules(wrap=False, empty_waste=False),
    Rules(wrap=True, empty_waste=True),
    Rules(wrap=False, empty_waste=True),
)
WINNABLE_EACH = 4
UNWINNABLE_EACH = 2


def main() -> None:
    lines = []
    for rules in RULE_SETS:
        kept = {True: 0, False: 0}
        wanted = {True: WINNABLE_EACH, False: UNWINNABLE_EACH}
        index = 0
        while kept[True] < WINNABLE_EACH or kept[False] < UNWINNABLE_EACH:
            seed = f"golden-{index}"
            index += 1
            deal = candidate_deal(seed, 0, rules)
            result = solve(deal, want_par=True)
            if kept[result.winnable] >= wanted[result.winnable]:
                continue
            if dfs_baseline(deal).winnable != result.winnable:
                sys.exit(f"solver and baseline disagree on {seed} {rules}")
            if result.par and wins_within(deal, result.par - 1) is not None:
                sys.exit(f"par of {seed} {rules} is not the fewest draws")
            kept[result.winnable] += 1
            record = {
                "source": f"seed {seed!r}, candidate 0",
                "rules": {"wrap": rules.wrap, "empty_waste": rules.empty_waste},
                **deal.codes(),
                "winnable": result.winnable,
                "par": result.par,
            }
            lines.append(json.dumps(record))
            print(record["source"], rules, result.winnable, result.par, file=sys.stderr)
    Path(__file__).with_name("golden_deals.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
