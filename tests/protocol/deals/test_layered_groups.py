"""The layered search's groups of masks do what the same work mask by mask does.

Masks that share their upper rows are kept as one bitset over the bottom row
(``protocol.deals.layered``); these properties compare every group operation the
search uses with the plain per-mask version on random sets of reachable masks.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.deals.depth_first import EMPTY, Board
from protocol.deals.groups import grow, take_new
from protocol.deals.layered import (
    _UPPER,
    _UPPER_MASK,
    CountCheck,
    _group_moves,
    _Groups,
    _most_played,
)
from protocol.deals.shuffle import candidate_deal
from protocol.rules.game import Rules
from protocol.rules.layout import PEAK_CARDS, ROWS

seeds = st.text("abcdef0123", min_size=1, max_size=6)
rules_st = st.sampled_from(
    [Rules(wrap=w, empty_waste=e) for w in (True, False) for e in (False, True)]
)
#: positions from the bottom row up, so that a card is decided after its coverers
BOTTOM_UP = [p for row in reversed(ROWS) for p in row]


@st.composite
def reachable_masks(draw: st.DrawFn, board: Board) -> set[int]:
    """Up to 40 masks in which every played card's coverers are played too."""
    masks = set()
    for _ in range(draw(st.integers(1, 40))):
        mask = 0
        keep = draw(st.floats(0.2, 0.95))
        for p in BOTTOM_UP:
            free = mask & board.cover_masks[p] == board.cover_masks[p]
            if free and draw(st.floats(0, 1)) < keep:
                mask |= 1 << p
        masks.add(mask)
    return masks


def to_groups(masks: set[int]) -> _Groups:
    groups: _Groups = {}
    for mask in masks:
        upper = mask & _UPPER_MASK
        groups[upper] = groups.get(upper, 0) | 1 << (mask >> _UPPER)
    return groups


def from_groups(groups: _Groups) -> set[int]:
    return {
        upper | bottom << _UPPER
        for upper, bits in groups.items()
        for bottom in range(1 << (PEAK_CARDS - _UPPER))
        if bits >> bottom & 1
    }


@settings(max_examples=60, deadline=None)
@given(seed=seeds, rules=rules_st, data=st.data())
def test_a_group_play_moves_the_same_states_as_playing_mask_by_mask(
    seed: str, rules: Rules, data: st.DataObject
) -> None:
    board = Board(candidate_deal(seed, 0, rules))
    masks = data.draw(reachable_masks(board))
    top = data.draw(st.integers(0, EMPTY))
    expected: dict[int, set[int]] = {}
    for mask in masks:
        for p in board.fitting[top]:
            if mask & (board.cover_masks[p] | 1 << p) == board.cover_masks[p]:
                expected.setdefault(board.peak_ranks[p], set()).add(mask | 1 << p)
    grown = grow({top: to_groups(masks)}, _group_moves(board))
    assert {r: from_groups(g) for r, g in grown.items() if g} == expected


@settings(max_examples=60, deadline=None)
@given(seed=seeds, rules=rules_st, data=st.data())
def test_the_counting_rule_keeps_the_same_masks_in_groups_as_one_by_one(
    seed: str, rules: Rules, data: st.DataObject
) -> None:
    deal = candidate_deal(seed, 0, rules)
    board = Board(deal)
    masks = data.draw(reachable_masks(board))
    drawn = data.draw(st.integers(0, len(deal.stock)))
    top = data.draw(st.integers(0, EMPTY))
    check = CountCheck(board, len(deal.stock))
    assert from_groups(check.keep_groups(to_groups(masks), drawn, top)) == check.keep(
        masks, drawn, top
    )


@settings(max_examples=60, deadline=None)
@given(seed=seeds, data=st.data())
def test_taking_new_masks_returns_the_unseen_ones_and_remembers_them(
    seed: str, data: st.DataObject
) -> None:
    board = Board(candidate_deal(seed, 0, Rules()))
    old = data.draw(reachable_masks(board))
    new = data.draw(reachable_masks(board))
    seen = to_groups(old)
    taken, count = take_new(seen, to_groups(new))
    assert from_groups(taken) == new - old
    assert count == len(new - old)
    assert from_groups(seen) == old | new


@settings(max_examples=40, deadline=None)
@given(seed=seeds, data=st.data())
def test_layer_probes_start_from_masks_with_the_most_cards_played(
    seed: str, data: st.DataObject
) -> None:
    board = Board(candidate_deal(seed, 0, Rules()))
    masks = data.draw(reachable_masks(board))
    picked = _most_played(to_groups(masks))
    assert picked and set(picked) <= masks
    assert picked[0].bit_count() == max(m.bit_count() for m in masks)
    assert len({m & _UPPER_MASK for m in picked}) == len(picked)  # one per group
