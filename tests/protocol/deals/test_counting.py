"""The counting rule and the searches that prune with it stay exact.

The packed rule (``protocol.deals.counting``) is held to the inequality it
packs, counted card by card; the depth-first search that now prunes with it,
and the layered search that skips start states with no card to play, are
held to plain exhaustive searches on the engine itself.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.deals.counting import Counting
from protocol.deals.depth_first import _PROBE_ORDERS, EMPTY, Board, depth_first
from protocol.deals.layered import CountCheck, _group_moves, layered
from protocol.deals.shuffle import candidate_deal
from protocol.deals.solver import solve, solve_game
from protocol.rules.cards import RANK_COUNT, is_adjacent
from protocol.rules.game import DRAW, Game, Rules, Status, replay
from tests.protocol.deals.test_layered_groups import from_groups, reachable_masks, to_groups
from tests.protocol.deals.test_solver import _brute_force_wins, _late_position

ALL_RULES = [Rules(wrap=w, empty_waste=e) for w in (True, False) for e in (False, True)]
rule_sets = st.sampled_from(ALL_RULES)
seeds = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)


def _sets(wrap: bool) -> list[tuple[int, ...]]:
    """One rank, and two or three ranks two apart (the sets the rule checks)."""
    sets = []
    for size in (1, 2, 3):
        for q in range(RANK_COUNT):
            ranks = tuple((q + 2 * k) % RANK_COUNT if wrap else q + 2 * k for k in range(size))
            if max(ranks) < RANK_COUNT:
                sets.append(ranks)
    return sets


def _broken_by_counting(
    board: Board, wrap: bool, limit: int, mask: int, drawn: int, top: int
) -> bool:
    """The counting rule, card by card: some set has more cards to play than predecessors."""
    left = [r for p, r in enumerate(board.peak_ranks) if not mask >> p & 1]
    stock = board.stock_ranks[drawn:limit]
    for ranks in _sets(wrap):
        near = {a for a in range(RANK_COUNT) if any(is_adjacent(a, q, wrap) for q in ranks)}
        to_play = sum(1 for r in left if r in ranks)
        takers = sum(1 for r in left if r in near) + sum(1 for r in stock if r in near)
        takers += top == EMPTY or top in near
        if to_play > takers:
            return True
    return False


@settings(max_examples=150, deadline=None)
@given(seed=seeds, rules=rule_sets, data=st.data())
def test_the_packed_counting_rule_breaks_exactly_when_a_set_lacks_predecessors(
    seed: str, rules: Rules, data: st.DataObject
) -> None:
    deal = candidate_deal(seed, 0, rules)
    board = Board(deal)
    limit = data.draw(st.integers(0, len(deal.stock)))
    counting = Counting(board.peak_ranks, board.stock_ranks, rules.wrap, limit)
    for mask in data.draw(reachable_masks(board)):
        drawn = data.draw(st.integers(0, limit))
        top = data.draw(st.integers(0, EMPTY))
        expected = _broken_by_counting(board, rules.wrap, limit, mask, drawn, top)
        assert counting.lost(counting.mask_sum(mask), drawn, top) is expected


def _can_play(board: Board, mask: int, top: int) -> bool:
    return any(
        not mask >> p & 1 and mask & board.cover_masks[p] == board.cover_masks[p]
        for p in board.fitting[top]
    )


@settings(max_examples=60, deadline=None)
@given(seed=seeds, rules=rule_sets, data=st.data())
def test_start_states_leave_out_seen_masks_and_masks_with_nothing_to_play(
    seed: str, rules: Rules, data: st.DataObject
) -> None:
    deal = candidate_deal(seed, 0, rules)
    board = Board(deal)
    masks = data.draw(reachable_masks(board))
    seen = data.draw(reachable_masks(board))
    drawn = data.draw(st.integers(0, len(deal.stock)))
    top = data.draw(st.integers(0, RANK_COUNT - 1))
    check = CountCheck(board, len(deal.stock))
    moves = _group_moves(board)[top]
    kept = check.keep_groups(to_groups(masks), drawn, top, to_groups(seen), moves)
    playable = {m for m in masks - seen if _can_play(board, m, top)}
    assert from_groups(kept) == check.keep(playable, drawn, top)


@pytest.mark.parametrize("rules", ALL_RULES, ids=str)
def test_fitting_positions_are_the_free_cards_of_adjacent_rank_in_probe_order(
    rules: Rules,
) -> None:
    board = Board(candidate_deal("fitting", 0, rules))
    for order in _PROBE_ORDERS:
        fitting = board.fitting_in(order)
        for top in range(EMPTY + 1):
            fits = [p for p in order if board.peak_ranks[p] in board.adjacent[top]]
            assert list(fitting[top]) == fits


def _fewest_draws(game: Game, budget: list[int]) -> int | None:
    """Plain exhaustive search on the engine for the fewest draws of any win."""
    budget[0] -= 1
    if budget[0] < 0:
        raise OverflowError
    if game.status is not Status.PLAYING:
        return 0 if game.status is Status.WON else None
    best: int | None = None
    last_card = sum(game.is_removed(p) for p in range(28)) == 27
    for move in game.legal_moves():
        if last_card and move != DRAW:
            return 0  # a won game refuses undo, so the winning play is not pushed
        game.push(move)
        rest = _fewest_draws(game, budget)
        game.undo()
        if rest is not None:
            rest += move == DRAW
            best = rest if best is None else min(best, rest)
    return best


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=seeds, rules=rule_sets, salt=st.integers(0, 2**32), guided=st.booleans())
def test_every_search_agrees_with_exhaustive_search_on_late_positions(
    seed: str, rules: Rules, salt: int, guided: bool
) -> None:
    """The depth-first search to its end, the layered search and par, on positions
    with at most four stock cards left, against the engine searched exhaustively."""
    deal = candidate_deal(seed, 0, rules)
    guide = (solve(deal).solution or ()) if guided else ()
    game = _late_position(deal, random.Random(salt), guide)
    if game.status is not Status.PLAYING:
        return  # decided already: the searches start from positions still in play
    try:
        fewest = _fewest_draws(replay(deal, game.history), [300_000])
    except OverflowError:  # pragma: no cover - the tree is small in practice
        pytest.skip("exhaustive tree too large")
    assert _brute_force_wins(replay(deal, game.history), [300_000]) is (fewest is not None)
    mask = sum(1 << p for p in range(28) if game.is_removed(p))
    drawn = len(deal.stock) - game.stock_left
    board = Board(deal, (mask, drawn, game.waste_top))
    limit = len(deal.stock)
    line, _ = depth_first(board, limit, 10**9, board.fitting, {})
    assert (line is not None) is (fewest is not None)
    par_drawn, par_line, _ = layered(board, limit)
    assert (par_line is not None) is (fewest is not None)
    assert (layered(board, limit, {})[1] is not None) is (fewest is not None)
    assert solve_game(game, want_par=True).par == fewest
    if par_drawn is not None:
        assert par_drawn - drawn == fewest


def _dead_rank(board: Board, limit: int, mask: int, drawn: int, top: int) -> bool:
    """The dead rank rule: a rank left in the peaks that no card but the top card
    can go before, with more than one card of it left or a top that cannot take
    it; or two such ranks, which the one top cannot both go before."""
    left = [0] * RANK_COUNT
    avail = [0] * RANK_COUNT
    for p, r in enumerate(board.peak_ranks):
        if not mask >> p & 1:
            left[r] += 1
            avail[r] += 1
    for r in board.stock_ranks[drawn:limit]:
        avail[r] += 1
    forced = [q for q in range(RANK_COUNT) if not any(avail[a] for a in board.adjacent[q])]
    forced = [q for q in forced if left[q]]
    takes = [q for q in forced if left[q] == 1 and top in board.adjacent[q]]
    return len(forced) > len(takes) or len(takes) > 1


@settings(max_examples=100, deadline=None)
@given(seed=seeds, rules=rule_sets, data=st.data())
def test_the_counting_rule_prunes_every_state_the_dead_rank_rule_prunes(
    seed: str, rules: Rules, data: st.DataObject
) -> None:
    deal = candidate_deal(seed, 0, rules)
    board = Board(deal)
    limit = data.draw(st.integers(0, len(deal.stock)))
    counting = board.counting(limit)
    for mask in data.draw(reachable_masks(board)):
        drawn = data.draw(st.integers(0, limit))
        top = data.draw(st.integers(0, RANK_COUNT - 1))  # a card on the waste
        if _dead_rank(board, limit, mask, drawn, top):
            assert counting.lost(counting.mask_sum(mask), drawn, top)

