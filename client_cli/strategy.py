"""How a bot picks its next move, from what the player may see and nothing else.

A strategy reads only a :class:`~client_cli.board.Knowledge`: face-up cards,
the waste top, the stock count and cards seen earlier.  Face-down cards and
the stock are :data:`~client_cli.board.UNKNOWN` there, so a bot cannot peek
even by mistake.

- ``greedy`` plays the free fitting card that scores best now (it uncovers a
  face-down card, sits high in a peak, keeps a run going), else draws.
- ``lookahead`` searches every chain of plays over the visible cards and
  starts the chain that clears and uncovers the most.

Both undo when they are stuck and the room allows it: they back up to the
last position with a move not tried yet (a small depth-first search over the
positions seen), within an undo budget, and give up after that.
"""

from __future__ import annotations

import random
from typing import Final

from client_cli.board import UNDO, UNKNOWN, Action, Knowledge
from protocol.rules.cards import is_adjacent, rank_of
from protocol.rules.game import DRAW, Status
from protocol.rules.layout import COVERED_BY, COVERS, PEAK_CARDS

STRATEGIES: Final = ("greedy", "lookahead")
#: What ``tripeaks bot --strategy`` accepts: a strategy, or ``mixed`` (bots take turns).
STRATEGY_CHOICES: Final = (*STRATEGIES, "mixed")
#: Undos a bot spends before it resigns a stuck game.
UNDO_BUDGET: Final = 40
#: Plays deep the lookahead searches (chains are short in practice).
LOOKAHEAD_DEPTH: Final = 10
#: Nodes the lookahead visits at most per decision, to keep bots cheap.
LOOKAHEAD_NODES: Final = 3000

_ROW_BONUS: Final = tuple(3 if p < 3 else 2 if p < 9 else 1 if p < 18 else 0 for p in range(28))

StateKey = tuple[int, int, int]


def _uncovers(known: Knowledge, position: int) -> int:
    """How many face-down cards playing ``position`` turns face up."""
    removed = known.removed
    count = 0
    for q in COVERS[position]:
        if all(removed[r] or r == position for r in COVERED_BY[q]):
            count += 1
    return count


def _follow_ups(known: Knowledge, position: int) -> int:
    """Other free known cards that would fit on the card at ``position``."""
    rank = rank_of(known.peaks[position])
    wrap = known.rules.wrap
    return sum(
        1
        for q in known.free_positions()
        if q != position
        and known.peaks[q] != UNKNOWN
        and is_adjacent(rank_of(known.peaks[q]), rank, wrap)
    )


def greedy_score(known: Knowledge, position: int) -> int:
    """Higher is better: uncovering first, then height in the peaks, then runs."""
    return 100 * _uncovers(known, position) + 10 * _ROW_BONUS[position] + _follow_ups(
        known, position
    )


def lookahead_score(known: Knowledge, position: int) -> int:
    """Score of the best chain of plays over visible cards that starts at ``position``."""
    budget = [LOOKAHEAD_NODES]
    trial = known.copy()
    trial.apply(position)
    return 3 + 4 * _uncovers(known, position) + _best_chain(trial, LOOKAHEAD_DEPTH - 1, budget)


def _best_chain(known: Knowledge, depth: int, budget: list[int]) -> int:
    if depth == 0 or budget[0] <= 0:
        return 0
    best = 0
    for p in known.playable():
        budget[0] -= 1
        gain = 3 + 4 * _uncovers(known, p) + _ROW_BONUS[p]
        known.apply(p)
        gain += _best_chain(known, depth - 1, budget)
        known.retract()
        best = max(best, gain)
        if budget[0] <= 0:
            break
    return best


def _key(known: Knowledge) -> StateKey:
    mask = 0
    for p in range(PEAK_CARDS):
        if known.removed[p]:
            mask |= 1 << p
    top = known.waste_top
    return mask, known.stock_left, -2 if top is None else top


class Strategy:
    """One bot's decision maker; keeps the positions it has tried when undo is on."""

    def __init__(
        self, name: str = "greedy", *, undo_budget: int = UNDO_BUDGET,
        rng: random.Random | None = None,
    ) -> None:
        if name not in STRATEGIES:
            raise ValueError(f"unknown strategy {name!r}; choose from {', '.join(STRATEGIES)}")
        self.name = name
        #: Breaks ties between equally good plays, so bots on one deal do not play alike.
        self.rng = rng
        self.undo_budget = undo_budget
        self.undos_spent = 0
        self._tried: dict[StateKey, set[Action]] = {}

    def choose(self, known: Knowledge) -> Action | None:
        """The next move, or ``None`` to give up (stuck with no undo left)."""
        if known.status is Status.WON:
            return None
        tracking = known.undo_allowed
        tried = self._tried.setdefault(_key(known), set()) if tracking else set()
        plays = [p for p in known.playable() if p not in tried]
        if plays:
            score = greedy_score if self.name == "greedy" else lookahead_score
            rng = self.rng
            if rng is None:
                best = max(plays, key=lambda p: score(known, p))
            else:
                best = max(plays, key=lambda p: (score(known, p), rng.random()))
            choice: Action = best
        elif known.stock_left and DRAW not in tried:
            choice = DRAW
        elif tracking and known.history and self.undos_spent < self.undo_budget:
            self.undos_spent += 1
            return UNDO
        else:
            return None
        if tracking:
            tried.add(choice)
        return choice
