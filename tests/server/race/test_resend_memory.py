"""The race's memory of answers (kept for resends) gives the garbage collector nothing to walk.

A server keeps 64 answers per player: thousands of players make that hundreds
of thousands of tuples, and a full collection that walks them stalls every
room (docs/server.md, "Memory and garbage collection").  A collection untracks
a tuple that holds only untracked values, so every answer holds plain ints,
strs, ``None`` and bools: no enum member, and no nested tuple (which the same
collection may untrack only after it looked at the answer).
"""

from __future__ import annotations

import gc

from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import DRAW, Rules, Status
from protocol.wire import messages as m
from protocol.wire.fast import (
    ACTION,
    FRESH,
    REASON,
    STATUS,
    TURNED,
    TURNED_2,
    UNDONE,
    MoveOutcome,
)
from server.race.race import Race

DEALT = deal_for_seed("42", Rules())
PLAY, DRAW_, UNDO = m.MoveAction.PLAY, m.MoveAction.DRAW, m.MoveAction.UNDO


def _kind(answer: MoveOutcome) -> str:
    if answer[REASON] is not None:
        return f"{answer[ACTION]} refused"
    if answer[ACTION] == "play":
        return f"play turning up {_filled(answer, TURNED, TURNED_2)}"
    if answer[ACTION] == "draw":
        return "draw"
    return f"undo of a {answer[UNDONE]} hiding {_filled(answer, TURNED, TURNED_2)}"


def _filled(answer: MoveOutcome, *fields: int) -> int:
    return sum(answer[field] is not None for field in fields)


def _plain(value: object) -> bool:
    """True for the values an answer may hold: exact ints, strs and bools, and None."""
    return value is None or type(value) in (int, str, bool)


def _play_every_kind(race: Race, strict: Race) -> list[MoveOutcome]:
    """Refusals, plays turning up 0 to 2 cards, draws, undos of each, a win and resends."""
    answers: list[MoveOutcome] = []
    seqs = {"a": 0, "c": 0}

    def move(pid: str, action: m.MoveAction, position: int | None = None) -> None:
        seqs[pid] += 1
        answers.append((strict if pid == "c" else race).answer(pid, seqs[pid], action, position, 9))

    move("a", UNDO)  # nothing to undo
    move("a", PLAY, 0)  # covered
    move("a", PLAY, 40)  # no such position
    move("c", UNDO)  # undo switched off
    for step in DEALT.solution:
        action, position = (DRAW_, None) if step == DRAW else (PLAY, int(step))
        move("a", action, position)
        if race.racers["a"].game.status is Status.WON:
            break
        move("a", UNDO)
        move("a", action, position)
    move("a", DRAW_)  # the game is over
    for back in (0, 5, 63):
        answers.append(race.answer("a", seqs["a"] - back, DRAW_, None, 10))
    return answers


def test_every_answer_the_race_keeps_is_untracked_by_the_garbage_collector() -> None:
    race = Race(DEALT.deal, [("a", "ann", False)], start_ms=0, allow_undo=True,
                undo_penalty_ms=5000, time_limit_ms=10**9)
    strict = Race(DEALT.deal, [("c", "cy", False)], start_ms=0, allow_undo=False,
                  undo_penalty_ms=0, time_limit_ms=10**9)
    answers = _play_every_kind(race, strict)
    kinds = {_kind(answer) for answer in answers}
    assert {f"play turning up {n}" for n in range(3)} <= kinds
    assert {f"undo of a play hiding {n}" for n in range(3)} <= kinds
    assert {"draw", "undo of a draw hiding 0"} <= kinds
    assert {"play refused", "draw refused", "undo refused"} <= kinds
    assert {answer[STATUS] for answer in answers} == {"playing", "won"}
    assert not all(answer[FRESH] for answer in answers)  # the resends are among them
    gc.collect()
    kept = [*race.racers["a"].answers, *strict.racers["c"].answers]
    assert len(kept) == 64 + 1
    for answer in [*kept, *answers]:
        assert all(_plain(value) for value in answer), answer
        assert not gc.is_tracked(answer), answer
