"""The exact solver: its lines win, its verdicts match brute force and golden data."""

from __future__ import annotations

import json
import pickle
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.deals.depth_first import Board, depth_first
from protocol.deals.layered import CountCheck, layered
from protocol.deals.shuffle import candidate_deal
from protocol.deals.solver import (
    EMPTY,
    SolveResult,
    dfs_baseline,
    par_of,
    solve,
    solve_game,
    wins_within,
)
from protocol.rules.game import DRAW, Deal, Game, Rules, Status, replay

DATA = Path(__file__).resolve().parents[2] / "data"
ALL_RULES = (
    Rules(wrap=True, empty_waste=False),
    Rules(wrap=False, empty_waste=False),
    Rules(wrap=True, empty_waste=True),
    Rules(wrap=False, empty_waste=True),
)
rule_sets = st.sampled_from(ALL_RULES)
seeds = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)


def _golden() -> list[dict[str, Any]]:
    lines = (DATA / "golden_deals.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _deal(record: dict[str, Any]) -> Deal:
    rules = Rules(**record["rules"])
    return Deal.from_codes(rules, record["peaks"], record["waste"], record["stock"])


def _brute_force_wins(game: Game, budget: list[int]) -> bool:
    """Plain exhaustive search on the engine itself: no memo, no pruning."""
    budget[0] -= 1
    if budget[0] < 0:
        raise OverflowError
    if game.status is Status.WON:
        return True
    for move in game.legal_moves():
        game.push(move)
        if _brute_force_wins(game, budget):
            return True
        game.undo()
    return False


def _late_position(deal: Deal, rng: random.Random, guide: tuple[int | str, ...]) -> Game:
    """Follow part of ``guide`` (a winning line, or nothing), then play at random
    until at most four stock cards are left: a small game tree to brute-force."""
    game = Game(deal)
    for move in guide[: rng.randrange(len(guide) + 1)]:
        if game.stock_left <= 4:
            break
        game.push(move)
    while game.stock_left > 4 and game.status is Status.PLAYING:
        moves = game.legal_moves()
        plays = [m for m in moves if m != DRAW]
        if plays and (rng.random() < 0.8 or DRAW not in moves):
            game.push(rng.choice(plays))
        else:
            game.push(DRAW)
    return game


@settings(max_examples=30, deadline=None)
@given(seed=seeds, rules=rule_sets)
def test_a_solver_line_replays_as_a_win_on_the_engine(seed: str, rules: Rules) -> None:
    deal = candidate_deal(seed, 0, rules)
    result = solve(deal)
    if result.winnable:
        assert result.solution is not None
        assert replay(deal, result.solution).status is Status.WON
    else:
        assert result.solution is None


@settings(max_examples=8, deadline=None)
@given(seed=seeds, rules=rule_sets)
def test_a_par_line_wins_with_exactly_par_draws_and_no_win_needs_fewer(
    seed: str, rules: Rules
) -> None:
    deal = candidate_deal(seed, 0, rules)
    result = solve(deal, want_par=True)
    if not result.winnable:
        assert result.par is None
        return
    assert result.par is not None and result.solution is not None
    game = replay(deal, result.solution)
    assert game.status is Status.WON
    assert game.draws == result.par
    if result.par > 0:
        assert wins_within(deal, result.par - 1) is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=seeds, rules=rule_sets, salt=st.integers(0, 2**32), guided=st.booleans())
def test_the_solver_agrees_with_brute_force_on_late_positions(
    seed: str, rules: Rules, salt: int, guided: bool
) -> None:
    """Reduced cases: positions with at most four stock cards left are small enough
    to search exhaustively on the engine, so "unwinnable" is checked, not trusted."""
    deal = candidate_deal(seed, 0, rules)
    guide: tuple[int | str, ...] = ()
    if guided:
        guide = solve(deal).solution or ()
    game = _late_position(deal, random.Random(salt), guide)
    verdict = solve_game(game, want_par=True)
    mask = sum(1 << p for p in range(28) if game.is_removed(p))
    drawn = len(deal.stock) - game.stock_left
    board = Board(deal, (mask, drawn, game.waste_top))
    layered_verdict = layered(board, len(deal.stock))[1] is not None
    copy = replay(deal, game.history)
    try:
        brute = _brute_force_wins(copy, [300_000])
    except OverflowError:  # pragma: no cover - the tree is small in practice
        pytest.skip("brute-force tree too large")
    assert verdict.winnable == brute
    assert layered_verdict == brute
    if verdict.winnable:
        assert verdict.solution is not None
        finished = replay(deal, game.history)
        for move in verdict.solution:
            finished.push(move)
        assert finished.status is Status.WON
        assert finished.draws - game.draws == verdict.par


@pytest.mark.parametrize("rules", ALL_RULES, ids=str)
def test_the_counting_rule_keeps_every_state_of_a_winning_line(rules: Rules) -> None:
    for record in _golden():
        deal = _deal(record)
        if deal.rules != rules or not record["winnable"]:
            continue
        board = Board(deal)
        check = CountCheck(board, len(deal.stock))
        game = Game(deal)
        for move in solve(deal, want_par=True).solution or ():
            game.push(move)
            if game.status is Status.WON:
                break
            mask = sum(1 << p for p in range(28) if game.is_removed(p))
            top = EMPTY if game.waste_top is None else game.waste_top % 13
            drawn = len(deal.stock) - game.stock_left
            assert check.keep({mask}, drawn, top) == {mask}


def test_solving_a_position_leaves_the_game_unchanged() -> None:
    deal = candidate_deal("position", 0, Rules())
    game = replay(deal, solve(deal).solution or ())
    fresh = Game(deal)
    fresh.push(DRAW)
    before = fresh.state_key()
    solve_game(fresh)
    assert fresh.state_key() == before
    assert solve_game(game) == SolveResult(True, (), None, 0)


@pytest.mark.parametrize("record", _golden(), ids=lambda r: f"{r['source']}-{r['rules']}")
def test_golden_deals_keep_their_known_solvability_and_par(record: dict[str, Any]) -> None:
    deal = _deal(record)
    result = solve(deal, want_par=True)
    assert result.winnable is record["winnable"]
    assert result.par == record["par"]
    if result.winnable:
        assert result.solution is not None
        assert replay(deal, result.solution).draws == record["par"]


def test_golden_data_covers_every_rule_set_with_winnable_and_unwinnable_deals() -> None:
    kinds = {(json.dumps(r["rules"], sort_keys=True), r["winnable"]) for r in _golden()}
    assert len(kinds) == 2 * len(ALL_RULES)


def _agree(record: dict[str, Any]) -> None:
    deal = _deal(record)
    board = Board(deal)
    limit = len(deal.stock)
    depth_line, _ = depth_first(board, limit, 10**9, board.fitting, {})
    _, layered_line, _ = layered(board, limit)
    assert (depth_line is not None) is record["winnable"]
    assert (layered_line is not None) is record["winnable"]
    assert dfs_baseline(deal).winnable is record["winnable"]


def test_both_exact_methods_and_the_plain_baseline_agree_on_winnable_golden_deals() -> None:
    for record in _golden():
        if record["winnable"] and record["source"] in (
            "seed 'golden-0', candidate 0",
            "seed 'golden-1', candidate 0",
        ):
            _agree(record)


def test_both_exact_methods_and_the_plain_baseline_agree_on_an_unwinnable_deal() -> None:
    # Proving a deal lost is slow without pruning, so only the cheapest golden
    # one here; make_golden.py checked the baseline on all of them.
    _agree(
        next(
            r
            for r in _golden()
            if r["source"] == "seed 'golden-2', candidate 0"
            and r["rules"] == {"wrap": False, "empty_waste": False}
        )
    )


def test_the_budget_of_the_depth_first_probe_never_changes_the_verdict() -> None:
    deal = _deal(next(r for r in _golden() if r["winnable"] and r["par"] >= 10))
    board = Board(deal)
    line, nodes = depth_first(board, len(deal.stock), 5, board.fitting, {})
    assert line is None and nodes == 5  # the probe gave up ...
    _, layered_line, _ = layered(board, len(deal.stock))
    assert layered_line is not None  # ... and the exhaustive search still wins
    assert solve(deal).winnable


# Candidate 0 of these seeds beats the first probes.  With wrap on,
# bench-dealer-150's win is found by a layer probe at draw 2 (par is 18),
# and bench-dealer-262 cannot be won at all.
HARD_WINNABLE = ("bench-dealer-150", "bench-dealer-219")
HARD_LOST = "bench-dealer-262"


@pytest.mark.parametrize("seed", HARD_WINNABLE)
def test_a_layer_probe_win_replays_and_agrees_with_the_breadth_first_verdict(seed: str) -> None:
    deal = candidate_deal(seed, 0, Rules())
    board = Board(deal)
    limit = len(deal.stock)
    par_draws, par_line, _ = layered(board, limit)
    won_at, line, states = layered(board, limit, {})
    assert par_line is not None and line is not None
    assert replay(deal, line).status is Status.WON
    assert won_at == line.count(DRAW)
    assert par_draws is not None and won_at >= par_draws  # any win will do, but never beats par
    assert states < 20_000  # found long before the breadth-first order gets there


def test_layer_probes_never_claim_a_win_in_a_lost_deal() -> None:
    deal = candidate_deal(HARD_LOST, 0, Rules())
    board = Board(deal)
    assert layered(board, len(deal.stock), {})[1] is None
    assert layered(board, len(deal.stock))[1] is None
    assert not solve(deal).winnable


def test_par_of_an_unwinnable_deal_is_an_error() -> None:
    deal = _deal(next(r for r in _golden() if not r["winnable"]))
    with pytest.raises(ValueError, match="cannot be won"):
        par_of(deal)


def test_results_are_picklable_for_the_process_pool() -> None:
    result = solve(candidate_deal("pickle", 0, Rules()), want_par=True)
    assert pickle.loads(pickle.dumps(result)) == result


@pytest.mark.parametrize("rules", ALL_RULES, ids=str)
def test_any_52_card_deal_is_decided_not_only_shuffled_ones(rules: Rules) -> None:
    for deck in (list(range(52)), list(range(51, -1, -1))):
        waste = None if rules.empty_waste else deck[28]
        stock = deck[28:] if rules.empty_waste else deck[29:]
        deal = Deal(rules, tuple(deck[:28]), waste, tuple(stock))
        result = solve(deal, want_par=True)
        assert result.winnable is dfs_baseline(deal).winnable
        if result.winnable:
            assert replay(deal, result.solution or ()).draws == result.par
