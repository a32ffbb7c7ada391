"""What one player knows of their game, with moves applied before the server confirms them.

No I/O here: the terminal app, the plain mode and the bots all drive this model.

:class:`Knowledge` is a TriPeaks game in which some cards are unknown: a card
still face down, the next stock card, or (after a resync) the waste cards
under the top.  It applies the shared rules (``protocol.rules.cards.is_adjacent``,
``protocol.rules.layout``) only where the known cards decide them, and says
:data:`UNSURE` otherwise.

:class:`Board` keeps the *confirmed* knowledge (what the server said) and the
list of moves sent but not yet answered, keyed by the client sequence number.
``shown`` is the confirmed knowledge with those pending moves applied
optimistically; when the server rejects one, it is dropped and ``shown`` is
rebuilt, which rolls the screen back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from protocol.rules.cards import Card, card_code, is_adjacent, parse_card, rank_of
from protocol.rules.game import DRAW, HIDDEN, Move, Rules, Status
from protocol.rules.layout import BOTTOM_ROW, COVERED_BY, COVERS, PEAK_CARDS
from protocol.rules.refusals import Reason

#: A card this player has not seen (face down, in the stock, or forgotten by a resync).
UNKNOWN: Final = -1
#: The move that takes back the last move.
UNDO: Final = "undo"
#: ``check`` answers this when the known cards cannot decide the move.
UNSURE: Final = "unsure"

Action = Move | Literal["undo"]
Verdict = Reason | None | Literal["unsure"]


def _code_or_unknown(code: str | None) -> Card:
    return UNKNOWN if code is None or code == HIDDEN else parse_card(code)


class Knowledge:
    """A game as one player sees it: the cards seen so far and the state of play.

    ``peaks[p]`` remembers the card at position ``p`` once seen, even if an undo
    covers it again (docs/rules.md: undo never reveals anything unseen).
    """

    __slots__ = (
        "cleared",
        "drawn_cards",
        "draws",
        "history",
        "history_complete",
        "moves",
        "peaks",
        "removed",
        "rules",
        "stock_left",
        "undo_allowed",
        "undos",
        "waste",
    )

    def __init__(self, rules: Rules, *, undo_allowed: bool = True) -> None:
        self.rules = rules
        self.undo_allowed = undo_allowed
        self.peaks: list[Card] = [UNKNOWN] * PEAK_CARDS
        self.removed: list[bool] = [False] * PEAK_CARDS
        self.cleared = 0
        self.waste: list[Card] = []
        #: Cards drawn from the stock so far, in draw order (kept across undos).
        self.drawn_cards: list[Card] = []
        self.stock_left = rules.stock_size
        self.history: list[Move] = []
        #: False after a resync: moves made before it are not in ``history``.
        self.history_complete = True
        self.moves = 0
        self.draws = 0
        self.undos = 0

    @classmethod
    def from_view(
        cls,
        rules: Rules,
        board: Sequence[str | None],
        waste_top: str | None,
        stock_left: int,
        *,
        moves: int = 0,
        draws: int = 0,
        undos: int = 0,
        undo_allowed: bool = True,
        history_complete: bool = True,
    ) -> Knowledge:
        """Knowledge built from a player view (race start or resync).

        ``board`` holds a card code, ``"??"`` or ``None`` (played) per position;
        ``waste_top`` a card code, ``"??"`` (unknown) or ``None`` (empty).
        """
        if len(board) != PEAK_CARDS:
            raise ValueError(f"a board has {PEAK_CARDS} positions, got {len(board)}")
        known = cls(rules, undo_allowed=undo_allowed)
        for p, entry in enumerate(board):
            if entry is None:
                known.removed[p] = True
                known.cleared += 1
            else:
                known.peaks[p] = _code_or_unknown(entry)
        # "??" on the waste: a spectator board hiding a card some racer has not seen.
        known.waste = [] if waste_top is None else [_code_or_unknown(waste_top)]
        known.stock_left = stock_left
        known.moves, known.draws, known.undos = moves, draws, undos
        known.history_complete = history_complete
        return known

    def copy(self) -> Knowledge:
        """An independent copy (the optimistic layer works on one)."""
        other = Knowledge.__new__(Knowledge)
        other.rules = self.rules
        other.undo_allowed = self.undo_allowed
        other.peaks = self.peaks.copy()
        other.removed = self.removed.copy()
        other.cleared = self.cleared
        other.waste = self.waste.copy()
        other.drawn_cards = self.drawn_cards.copy()
        other.stock_left = self.stock_left
        other.history = self.history.copy()
        other.history_complete = self.history_complete
        other.moves, other.draws, other.undos = self.moves, self.draws, self.undos
        return other

    # ---- queries -------------------------------------------------------
    @property
    def waste_top(self) -> Card | None:
        """The waste's top card, :data:`UNKNOWN` while a draw is unanswered, or ``None``."""
        return self.waste[-1] if self.waste else None

    def is_face_up(self, position: int) -> bool:
        """True when every card covering ``position`` has been played."""
        removed = self.removed
        return all(removed[q] for q in COVERED_BY[position])

    def is_free(self, position: int) -> bool:
        """True when the card at ``position`` is still there and uncovered."""
        return not self.removed[position] and self.is_face_up(position)

    def visible(self, position: int) -> Card | None:
        """The card shown at ``position``: a card, :data:`UNKNOWN` face down, ``None`` played."""
        if self.removed[position]:
            return None
        return self.peaks[position] if self.is_face_up(position) else UNKNOWN

    def free_positions(self) -> list[int]:
        """Positions whose card is free, bottom row first (cheap: bots call it every move)."""
        removed = self.removed
        return [
            p
            for p in range(PEAK_CARDS - 1, -1, -1)
            if not removed[p] and all(removed[q] for q in COVERED_BY[p])
        ]

    def fits(self, card: Card) -> bool | None:
        """Whether ``card`` goes on the waste; ``None`` when either card is unknown."""
        top = self.waste_top
        if top is None:
            return True
        if top == UNKNOWN or card == UNKNOWN:
            return None
        return is_adjacent(rank_of(card), rank_of(top), self.rules.wrap)

    def playable(self) -> list[int]:
        """Free positions whose known card surely fits the waste now."""
        return [p for p in self.free_positions() if self.fits(self.peaks[p]) is True]

    @property
    def status(self) -> Status:
        """Won, stuck (as far as the known cards tell) or still playing."""
        if self.cleared == PEAK_CARDS:
            return Status.WON
        if self.stock_left == 0 and all(
            self.fits(self.peaks[p]) is False for p in self.free_positions()
        ):
            return Status.STUCK
        return Status.PLAYING

    def check(self, action: Action) -> Verdict:
        """Why ``action`` is illegal, ``None`` if legal, :data:`UNSURE` if cards can't tell."""
        if action == UNDO:
            return self._check_undo()
        if action == DRAW:
            if self.status is not Status.PLAYING:
                return Reason.GAME_OVER
            return None if self.stock_left else Reason.STOCK_EMPTY
        if not isinstance(action, int) or isinstance(action, bool):
            return Reason.NO_SUCH_POSITION
        if not 0 <= action < PEAK_CARDS:
            return Reason.NO_SUCH_POSITION
        if self.status is not Status.PLAYING:
            return Reason.GAME_OVER
        if self.removed[action]:
            return Reason.ALREADY_PLAYED
        if not self.is_face_up(action):
            return Reason.COVERED
        fits = self.fits(self.peaks[action])
        if fits is None:
            return UNSURE
        return None if fits else Reason.NOT_ADJACENT

    def _check_undo(self) -> Verdict:
        if not self.undo_allowed:
            return Reason.UNDO_NOT_ALLOWED
        if self.cleared == PEAK_CARDS:
            return Reason.GAME_OVER
        if self.history:
            return None
        return UNSURE if not self.history_complete else Reason.NOTHING_TO_UNDO

    # ---- applying moves ------------------------------------------------
    def apply(self, action: Action, *, assume: bool = False) -> bool:
        """Apply ``action`` locally if the known cards allow it; return whether it was applied.

        A draw is applied even when the drawn card is unknown (the waste top is
        then :data:`UNKNOWN`).  A play the known cards cannot decide is applied
        only with ``assume`` (the optimistic screen assumes the server agrees);
        an undo of a move from before a resync never is.
        """
        verdict = self.check(action)
        if verdict == UNSURE and assume and action != UNDO:
            verdict = None
        if verdict is not None:
            return False
        if action == UNDO:
            self._undo()
        elif action == DRAW:
            self._draw()
        else:
            assert isinstance(action, int)
            self._play(action)
        return True

    def _play(self, position: int) -> None:
        self.removed[position] = True
        self.cleared += 1
        self.waste.append(self.peaks[position])
        self.history.append(position)
        self.moves += 1

    def _draw(self) -> None:
        index = self.drawn_count
        card = self.drawn_cards[index] if index < len(self.drawn_cards) else UNKNOWN
        self.waste.append(card)
        self.stock_left -= 1
        self.history.append(DRAW)
        self.moves += 1
        self.draws += 1

    @property
    def drawn_count(self) -> int:
        """How many stock cards are on the waste now (the index of the next draw)."""
        return self.rules.stock_size - self.stock_left

    def retract(self) -> None:
        """Take back the last move whatever the room's undo rule (for searches)."""
        self._undo()
        self.undos -= 1

    def _undo(self) -> None:
        move = self.history.pop()
        self.waste.pop()
        if move == DRAW:
            self.stock_left += 1
        else:
            assert isinstance(move, int)
            self.removed[move] = False
            self.cleared -= 1
        self.undos += 1

    # ---- what the server tells ------------------------------------------
    def learn(self, uncovered: Mapping[int, str]) -> None:
        """Record the codes of cards the server has turned face up."""
        for position, code in uncovered.items():
            self.peaks[position] = parse_card(code)

    def confirm(
        self,
        action: Action,
        *,
        uncovered: Mapping[int, str],
        waste_top: str | None,
        stock_left: int | None = None,
        counts: Mapping[str, int] | None = None,
        restored: int | None = None,
    ) -> None:
        """Apply ``action`` as the server accepted it, with the facts it sent.

        ``restored`` is the position an accepted undo put a card back on, when
        the server names it (needed for an undo of a move from before a resync).

        The server is the authority: its waste top and counts overwrite the
        local guess, so a model that drifted is pulled back into line.
        """
        self.learn(uncovered)
        if action == DRAW and waste_top is not None:
            self._remember_draw(parse_card(waste_top))
        if not self.apply(action):
            self._apply_blind(action, restored)
        if waste_top is None:
            self.waste.clear()
        elif self.waste:
            self.waste[-1] = parse_card(waste_top)
        else:
            self.waste.append(parse_card(waste_top))
        if stock_left is not None:
            self.stock_left = stock_left
        if counts:
            self.moves = counts.get("moves", self.moves)
            self.draws = counts.get("draws", self.draws)
            self.undos = counts.get("undos", self.undos)

    def _remember_draw(self, card: Card) -> None:
        index = self.drawn_count
        while len(self.drawn_cards) <= index:
            self.drawn_cards.append(UNKNOWN)
        self.drawn_cards[index] = card

    def _apply_blind(self, action: Action, restored: int | None) -> None:
        """Apply a move the server accepted but the known cards could not check."""
        if action == UNDO:
            if self.history:
                self._undo()
                return
            # An undo of a move made before a resync: only the server's facts tell.
            self.undos += 1
            if self.waste:
                self.waste.pop()
            if restored is not None and 0 <= restored < PEAK_CARDS and self.removed[restored]:
                self.removed[restored] = False
                self.cleared -= 1
        elif isinstance(action, int) and 0 <= action < PEAK_CARDS and not self.removed[action]:
            self._play(action)
        # Anything else is a no-op: the server's waste top and counts still apply.


@dataclass(slots=True)
class Pending:
    """A move sent to the server and not answered yet."""

    seq: int
    action: Action


class Board:
    """Confirmed knowledge plus the moves in flight, keyed by client sequence number."""

    def __init__(self, known: Knowledge, *, next_seq: int = 1) -> None:
        self.confirmed = known
        self.pending: list[Pending] = []
        self.next_seq = next_seq
        self._shown: Knowledge | None = None
        self._incomplete = False

    @property
    def shown(self) -> Knowledge:
        """What the screen shows: confirmed knowledge with the pending moves applied."""
        if not self.pending:
            return self.confirmed
        if self._shown is None:
            shown = self.confirmed.copy()
            self._incomplete = False
            for item in self.pending:
                if not shown.apply(item.action, assume=True):
                    # The server will judge this one; what follows cannot be shown yet.
                    self._incomplete = True
                    break
            self._shown = shown
        return self._shown

    def check(self, action: Action) -> Verdict:
        """Judge ``action`` against what the screen shows.

        While a move in flight could not be shown, only refusals that no
        earlier move can change are sure; anything else is left to the server.
        """
        verdict = self.shown.check(action)
        unsure = self.pending and self._incomplete and isinstance(verdict, Reason)
        if unsure and verdict not in (Reason.NO_SUCH_POSITION, Reason.UNDO_NOT_ALLOWED):
            return UNSURE
        return verdict

    def propose(self, action: Action, seq: int | None = None) -> int:
        """Record ``action`` as sent and return its sequence number.

        ``seq`` is the number the client session gave the move (by default the
        board numbers it).  The caller checks first (``check``) and refuses a
        sure-illegal move locally; a move the known cards cannot decide is sent
        and judged by the server.
        """
        if seq is None:
            seq = self.next_seq
        self.next_seq = seq + 1
        self.pending.append(Pending(seq, action))
        self._shown = None
        return seq

    def _take(self, seq: int) -> Pending | None:
        for index, item in enumerate(self.pending):
            if item.seq == seq:
                # Answers come in order; anything older was lost in a reconnect.
                del self.pending[: index + 1]
                self._shown = None
                return item
        return None

    def accept(
        self,
        seq: int,
        *,
        uncovered: Mapping[int, str] | Iterable[tuple[int, str]] = (),
        waste_top: str | None,
        stock_left: int | None = None,
        counts: Mapping[str, int] | None = None,
        restored: int | None = None,
    ) -> bool:
        """The server accepted move ``seq``; return False if it was not pending."""
        item = self._take(seq)
        if item is None:
            return False
        self.confirmed.confirm(
            item.action,
            uncovered=dict(uncovered),
            waste_top=waste_top,
            stock_left=stock_left,
            counts=counts,
            restored=restored,
        )
        return True

    def reject(self, seq: int) -> Action | None:
        """The server rejected move ``seq``: drop it (rolling the screen back) and return it."""
        item = self._take(seq)
        return None if item is None else item.action

    def forget(self, seq: int) -> None:
        """Frame ``seq`` was refused unhandled: drop it and what follows; reuse the number."""
        if any(item.seq == seq for item in self.pending):
            self.pending = [item for item in self.pending if item.seq < seq]
            self.next_seq = seq
            self._shown = None

    def resync(self, known: Knowledge, last_seq: int) -> None:
        """Replace everything with the server's full view after a reconnect.

        Moves up to ``last_seq`` are in the view; later pending moves are kept
        and renumbered from ``last_seq + 1`` (the caller resends them), and
        cards seen before are remembered.
        """
        for p, card in enumerate(self.confirmed.peaks):
            if known.peaks[p] == UNKNOWN and card != UNKNOWN:
                known.peaks[p] = card
        self.confirmed = known
        # The server has handled exactly the moves up to last_seq; the rest go
        # again, numbered on from there so no gap is left (the server wants last + 1).
        kept = [item for item in self.pending if item.seq > last_seq]
        for offset, item in enumerate(kept, 1):
            item.seq = last_seq + offset
        self.pending = kept
        self.next_seq = last_seq + 1 + len(kept)
        self._shown = None


def view_codes(known: Knowledge) -> tuple[str | None, ...]:
    """The board as a player view shows it: code, ``"??"`` or ``None`` per position."""
    out: list[str | None] = []
    for p in range(PEAK_CARDS):
        card = known.visible(p)
        out.append(None if card is None else HIDDEN if card == UNKNOWN else card_code(card))
    return tuple(out)


def start_knowledge(
    rules: Rules, bottom: Sequence[str], waste_top: str | None, *, undo_allowed: bool = True
) -> Knowledge:
    """Knowledge at the start of a race from the ten bottom-row codes and the waste top."""
    board: list[str | None] = [HIDDEN] * PEAK_CARDS
    for p, code in zip(BOTTOM_ROW, bottom, strict=True):
        board[p] = code
    return Knowledge.from_view(rules, board, waste_top, rules.stock_size, undo_allowed=undo_allowed)


def newly_face_up(known: Knowledge, position: int) -> list[int]:
    """Positions that turn face up when ``position`` is played (given the current board)."""
    removed = known.removed
    return [
        q for q in COVERS[position] if all(removed[r] or r == position for r in COVERED_BY[q])
    ]
