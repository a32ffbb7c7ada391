"""The dealer: first winnable candidate, deterministic, with a winning line and par."""

from __future__ import annotations

import pickle

import pytest

from protocol.deals.dealer import (
    PAR_RANGES,
    DealtGame,
    Difficulty,
    deal_for_seed,
    in_range,
)
from protocol.deals.shuffle import SeedError, candidate_deal
from protocol.deals.solver import solve
from protocol.rules.game import Rules, Status, replay

#: Candidate 0 of this seed cannot be won with wrap on (see tests/data/golden_deals.jsonl).
SEED_WITH_UNWINNABLE_FIRST_CANDIDATE = "golden-2"


def test_the_same_seed_and_rules_always_give_the_same_dealt_game() -> None:
    first = deal_for_seed("repeatable", Rules())
    second = deal_for_seed("repeatable", Rules())
    assert first == second


def test_a_dealt_game_comes_with_a_line_that_wins_with_exactly_par_draws() -> None:
    dealt = deal_for_seed("line", Rules(wrap=False))
    game = replay(dealt.deal, dealt.solution)
    assert game.status is Status.WON
    assert dealt.par is not None and game.draws == dealt.par


def test_the_dealer_skips_unwinnable_candidates_in_order() -> None:
    rules = Rules()
    assert not solve(candidate_deal(SEED_WITH_UNWINNABLE_FIRST_CANDIDATE, 0, rules)).winnable
    dealt = deal_for_seed(SEED_WITH_UNWINNABLE_FIRST_CANDIDATE, rules)
    assert dealt.candidate >= 1
    for earlier in range(dealt.candidate):
        assert not solve(candidate_deal(dealt.seed, earlier, rules)).winnable
    assert dealt.deal == candidate_deal(dealt.seed, dealt.candidate, rules)


def test_without_par_the_dealer_returns_the_same_deal_and_a_winning_line() -> None:
    with_par = deal_for_seed("no-par", Rules(empty_waste=True))
    without = deal_for_seed("no-par", Rules(empty_waste=True), with_par=False)
    assert without.par is None
    assert (without.candidate, without.deal) == (with_par.candidate, with_par.deal)
    assert replay(without.deal, without.solution).status is Status.WON


@pytest.mark.parametrize("difficulty", [Difficulty.EASY, Difficulty.MEDIUM, Difficulty.HARD])
def test_a_requested_difficulty_gives_the_first_candidate_with_par_in_its_range(
    difficulty: Difficulty,
) -> None:
    rules = Rules()
    dealt = deal_for_seed("levels", rules, difficulty)
    assert dealt.difficulty is difficulty
    assert dealt.par is not None and in_range(dealt.par, difficulty)
    for earlier in range(dealt.candidate):
        result = solve(candidate_deal("levels", earlier, rules), want_par=True)
        assert not result.winnable or not in_range(result.par or 0, difficulty)


def test_difficulty_ranges_cover_every_par_exactly_once() -> None:
    for par in range(0, 24):
        levels = [d for d in Difficulty if d is not Difficulty.ANY and in_range(par, d)]
        assert len(levels) == 1
        assert in_range(par, Difficulty.ANY)
    assert set(PAR_RANGES) == set(Difficulty)


def test_difficulty_names_are_the_strings_on_the_wire() -> None:
    assert [d.value for d in Difficulty] == ["any", "easy", "medium", "hard"]
    assert Difficulty("hard") is Difficulty.HARD
    assert deal_for_seed("str", Rules(), "easy").difficulty is Difficulty.EASY  # type: ignore[arg-type]


def test_a_dealt_game_survives_pickling_for_the_process_pool() -> None:
    dealt = deal_for_seed("pickle", Rules(wrap=False, empty_waste=True))
    copy = pickle.loads(pickle.dumps(dealt))
    assert copy == dealt
    assert isinstance(copy, DealtGame)


@pytest.mark.parametrize("seed", ["", "x" * 65, "tab\there"])
def test_a_bad_seed_is_refused_with_a_clear_error(seed: str) -> None:
    with pytest.raises(SeedError):
        deal_for_seed(seed, Rules())
