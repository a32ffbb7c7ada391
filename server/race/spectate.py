"""What spectators see of a room, pure (time passed in): the delayed feed and the
boards with the cards some racer has not seen yet face down.

Every frame meant for spectators is queued with a release time ``delay_ms``
after it was made, so a spectator never sees a board before the room's
spectator delay has passed.  Released frames also update a snapshot, keyed
by what they describe (``"race"``, ``"progress"``, ``"board:<player>"`` ...),
so that a spectator who joins late, comes back or sends ``sync`` first
receives the latest released frame of each kind (the catch-up, in
:data:`CATCH_UP_ORDER`) and then the live (delayed) stream.

A spectator's board (:func:`spectator_view`) shows a card face only once
every racer still racing has seen that card (:func:`visible_cards`), unless
the room chose open boards; :class:`BoardsShown` remembers what spectators
were last shown, so that a progress flush sends only the boards that changed.
For a spectator who asked for them, :func:`pack_updates` packs the
``progress`` and boards of one moment into one ``spectator_update``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Sequence
from typing import Final, Generic, TypeVar

from protocol.rules.cards import ALL_CODES, DECK_SIZE
from protocol.rules.game import HIDDEN, Game
from protocol.wire.fast import BoardRow, board_message
from protocol.wire.messages import (
    BoardView,
    Progress,
    ServerMessage,
    SpectatorBoard,
    SpectatorUpdate,
)
from server.race.race import Race, Racer

T = TypeVar("T")

#: The kinds of snapshot key (the part before any ``":"``), in the order a catch-up
#: sends them; within a kind, in the order each key was first released.
CATCH_UP_ORDER: Final = ("countdown", "race", "progress", "board", "finish", "over")
_RANK: Final = {kind: rank for rank, kind in enumerate(CATCH_UP_ORDER)}

#: Frames queued this close together (ms) leave the delayed feed together: the frames of
#: one moment (a flush's progress and boards) may be stamped a millisecond apart.
MOMENT_MS: Final = 5

#: Every card, one bit each (see :attr:`server.race.race.Racer.seen`).
ALL_CARDS: Final = (1 << DECK_SIZE) - 1


class _Queued(Generic[T]):
    """A frame held back until ``release_ms`` (a plain class: mypyc compiles no generic
    dataclass, see tools/native.py)."""

    __slots__ = ("frame", "key", "new_race", "quiet", "release_ms")

    def __init__(
        self, release_ms: int, key: str | None, frame: T, new_race: bool, quiet: bool
    ) -> None:
        self.release_ms = release_ms
        self.key = key
        self.frame = frame
        self.new_race = new_race
        self.quiet = quiet


#: The snapshot kinds a feed without delay may keep as a mark instead of the frame:
#: the room's frame of that kind is built afresh when a catch-up needs it.
LIVE_KINDS: Final = frozenset({"progress", "board"})


class _Live:
    """In a snapshot, in place of a frame: build the current one (see ``live``)."""

    __slots__ = ()


_LIVE: Final = _Live()


class SpectatorFeed(Generic[T]):
    """Frames for spectators, held back by ``delay_ms`` and remembered by key.

    ``live``: kinds of key (:data:`LIVE_KINDS`) whose latest frame a feed without
    delay does not keep, only marks; :meth:`snapshot` asks for the current frame of
    each mark.  A progress line and a board are replaced a few times a second in
    every room, and every one kept would be a handful of objects the garbage
    collector's young collections walk (thousands of rooms: tens of thousands of
    objects, and as many milliseconds' stall); without a delay, the frame a late
    spectator catches up on may as well be made at that moment.  A feed with a
    delay keeps every frame: what it has released is older than what is current.
    """

    def __init__(self, delay_ms: int, live: Collection[str] = ()) -> None:
        self.delay_ms = delay_ms
        self.live = frozenset(live)
        self._queue: deque[_Queued[T]] = deque()
        self._snapshot: dict[str, T | _Live] = {}

    def _keep(self, key: str, frame: T) -> None:
        live = self.live
        if live and not self.delay_ms and key.partition(":")[0] in live:
            self._snapshot[key] = _LIVE
        else:
            self._snapshot[key] = frame

    def push(
        self,
        now_ms: int,
        frame: T,
        key: str | None = None,
        *,
        new_race: bool = False,
        quiet: bool = False,
    ) -> None:
        """Queue ``frame``; ``new_race`` drops the previous race's snapshot on release;
        a ``quiet`` frame only updates the snapshot (nobody watching needs it now).

        Frames queued less than :data:`MOMENT_MS` before it wait for it, so that one
        moment's frames are released (and packed into updates) together; a frame is
        only ever released later than its delay, never sooner."""
        release = now_ms + self.delay_ms
        queue = self._queue
        tail = len(queue)
        while tail and release - MOMENT_MS < queue[tail - 1].release_ms < release:
            tail -= 1
        for index in range(tail, len(queue)):
            queue[index].release_ms = release
        queue.append(_Queued(release, key, frame, new_race, quiet))

    def release_now(
        self, frame: T, key: str | None = None, new_race: bool = False, quiet: bool = False
    ) -> bool | None:
        """:meth:`push` and :meth:`due` at once, for a feed without delay and with nothing
        queued (the usual case, and the cheap one): True when ``frame`` is to be sent now,
        False when it is quiet.  ``None``, and nothing done, when the feed holds frames
        back (see :meth:`can_release_now`): ``frame`` is for :meth:`push` then."""
        if self.delay_ms or self._queue:
            return None
        if new_race:
            self._snapshot.clear()
        if key is not None:
            self._keep(key, frame)
        return not quiet

    def keeps_marks(self, *kinds: str) -> bool:
        """True when frames of ``kinds`` released now would be due at once and kept as
        marks (no delay, nothing queued, live kinds): :meth:`mark` may then stand for
        their :meth:`release_now`, without the frames."""
        return self.can_release_now() and self.live.issuperset(kinds)

    def mark(self, key: str) -> None:
        """:meth:`release_now` of a frame of ``key`` (not quiet, not a new race), when
        :meth:`keeps_marks` of its kind: the snapshot keeps only its mark."""
        self._snapshot[key] = _LIVE

    def can_release_now(self) -> bool:
        """True when a frame pushed now would be due at once and first in line."""
        return not self.delay_ms and not self._queue

    def next_release_ms(self) -> int | None:
        """When the next queued frame is due, or ``None`` when nothing is queued."""
        return self._queue[0].release_ms if self._queue else None

    def due(self, now_ms: int) -> list[T]:
        """Pop every frame due by ``now_ms``, in order, updating the snapshot; the frames
        to send (quiet ones are not)."""
        released: list[T] = []
        while self._queue and self._queue[0].release_ms <= now_ms:
            item = self._queue.popleft()
            if item.new_race:
                self._snapshot.clear()
            if item.key is not None:
                self._keep(item.key, item.frame)
            if not item.quiet:
                released.append(item.frame)
        return released

    def snapshot(self, current: Callable[[str], T | None] | None = None) -> list[T]:
        """The latest released frame of each kind, in :data:`CATCH_UP_ORDER`; for a key
        only marked (``live``), ``current(key)``, left out when that is ``None`` or no
        ``current`` is given."""
        keys = sorted(self._snapshot, key=lambda key: _RANK.get(key.partition(":")[0], -1))
        frames = []
        for key in keys:
            frame = self._snapshot[key]
            if isinstance(frame, _Live):
                made = current(key) if current is not None else None
                if made is not None:
                    frames.append(made)
            else:
                frames.append(frame)
        return frames

    def latest(self, key: str) -> T | None:
        """The latest released frame of ``key``, if one is kept (not a mark)."""
        frame = self._snapshot.get(key)
        return None if frame is None or isinstance(frame, _Live) else frame

    def pending(self) -> int:
        """Frames still held back."""
        return len(self._queue)


def visible_cards(race: Race) -> int:
    """The cards every racer still racing has seen (a bit each); every card once the
    race is over.  A racer who finished, is out, resigned or left no longer counts."""
    if race.over:
        return ALL_CARDS
    visible = ALL_CARDS
    for racer in race.racers.values():
        if not racer.is_done:
            visible &= racer.seen
    return visible


def shown_cards(race: Race, open_boards: bool) -> int:
    """The cards spectators may see faces of now: every card with open boards, else
    :func:`visible_cards`."""
    return ALL_CARDS if open_boards else visible_cards(race)


def spectator_view(
    racer: Racer, visible: int, positions: dict[int, int] | None = None,
    peak_cards: int = ALL_CARDS,
) -> BoardView:
    """``racer``'s board as spectators see it: their own view, with the face of every
    card not in ``visible`` shown as ``"??"`` (on the board and on the waste).

    ``positions``: each peak card's position (:attr:`Race.positions`), when at hand;
    ``peak_cards``: those cards, a bit each (:attr:`Race.peak_cards`; the stock's cards
    can only show on the waste).
    """
    return board_message(_row_and_hidden(racer, visible, positions, peak_cards, 0)[0]).view


#: In :func:`_row_and_hidden`'s second value, the bit for a hidden waste top.
_WASTE_HIDDEN: Final = 1 << 28


def _row_and_hidden(
    racer: Racer, visible: int, positions: dict[int, int] | None, peak_cards: int,
    elapsed_ms: int,
) -> tuple[BoardRow, int]:
    """:func:`spectator_view` as a board row at race time ``elapsed_ms``, and which of its
    faces it hid: a bit per board position, and :data:`_WASTE_HIDDEN` for the waste (the
    view of the same position of the game differs exactly when these do)."""
    game = racer.game
    top, stock_left, _cleared, moves, draws, undos, status = game.tally()
    board = game.board
    hidden = 0
    # Every face on the racer's board is a card they have seen (Racer.seen): only the
    # few seen and not visible can need hiding, each found by its card.
    hide = racer.seen & ~visible & peak_cards
    if hide:
        if positions is None:
            positions = {card: p for p, card in enumerate(game.deal.peaks)}
        entries: list[str | None] | None = None
        while hide:
            low = hide & -hide
            hide ^= low
            position = positions.get(low.bit_length() - 1)
            # A face down again after an undo (seen, not visible) needs no hiding.
            if position is not None and board[position] not in (None, HIDDEN):
                if entries is None:
                    entries = list(board)
                entries[position] = HIDDEN
                hidden |= 1 << position
        if entries is not None:
            board = tuple(entries)
    if top is None:
        waste = None
    elif visible >> top & 1:
        waste = ALL_CODES[top]
    else:
        waste, hidden = HIDDEN, hidden | _WASTE_HIDDEN
    row = (racer.player_id, board, waste, stock_left, moves, draws, undos, status, elapsed_ms)
    return row, hidden


class _Shown:
    """What spectators were last shown of one racer's board (:class:`BoardsShown`)."""

    __slots__ = ("count", "game", "hidden", "seen")

    def __init__(self, game: Game, count: int, seen: int, hidden: int) -> None:
        self.game = game
        self.count = count  # moves << 32 | undos
        self.seen = seen
        self.hidden = hidden


class BoardsShown:
    """What spectators were last shown of each racer's board, for one race.

    Kept as what the board was built from: the racer's game, its counters of
    moves and undos (every play, draw and undo adds one, and the board shows
    both, so it changes exactly when they do), the visible cards among those the
    racer has seen (no other card can show on their board) and which faces the
    board hid.  While these stay the same, the board is not built again.  Only
    ints and the games are kept, no board, in one record per racer that lives as
    long as the race: what a flush builds dies with the frames it sent, and the
    garbage collector's young collections, which walk every object made since
    the last one and still alive, meet none of it.
    """

    def __init__(self) -> None:
        self._shown: dict[str, _Shown] = {}
        self._visible = -1

    def forget(self) -> None:
        """Nothing was shown yet (a new race, or boards were not built for a while)."""
        self._shown.clear()
        self._visible = -1

    def changed(
        self, race: Race, moved: Collection[str], open_boards: bool, now_ms: int
    ) -> list[SpectatorBoard]:
        """:meth:`changed_rows` at ``now_ms`` as ``spectator_board`` messages."""
        elapsed = race.elapsed(race.end_ms or now_ms)
        return [board_message(row) for row in self.changed_rows(race, moved, open_boards, elapsed)]

    def changed_rows(
        self, race: Race, moved: Collection[str], open_boards: bool, elapsed_ms: int
    ) -> list[BoardRow]:
        """The boards that differ from what spectators were last shown (and now are), as
        rows at race time ``elapsed_ms`` (:func:`protocol.wire.fast.board_message` makes
        each a message).

        ``moved``: the racers whose own board may have changed; when the visible
        cards changed, every racer's board is looked at.  A racer's board with other
        counters, or of another game, has changed; with the same ones, it has when
        other faces are hidden.
        """
        visible = shown_cards(race, open_boards)
        every = visible != self._visible
        self._visible = visible
        shown_of = self._shown
        positions, peaks = race.positions, race.peak_cards
        boards = []
        for pid, racer in race.racers.items():
            if not every and pid not in moved:
                continue
            game = racer.game
            count, seen = game.moves << 32 | game.undos, visible & racer.seen
            shown = shown_of.get(pid)
            same = shown is not None and shown.game is game and shown.count == count
            if same and shown is not None and shown.seen == seen:
                continue
            row, hidden = _row_and_hidden(racer, visible, positions, peaks, elapsed_ms)
            if shown is None:
                shown_of[pid] = _Shown(game, count, seen, hidden)
                boards.append(row)
                continue
            if not same or shown.hidden != hidden:
                boards.append(row)
            shown.game, shown.count, shown.seen, shown.hidden = game, count, seen, hidden
        return boards


#: The frames a ``spectator_update`` carries.
UPDATE_PARTS: Final = (Progress, SpectatorBoard)


def pack_updates(messages: Sequence[ServerMessage]) -> list[ServerMessage]:
    """``messages`` as a spectator that asked for ``spectator_update`` gets them: each
    run of ``progress`` and ``spectator_board`` frames packed into updates, in order.

    An update holds one moment: a ``progress`` and the boards after it.  A second
    ``progress``, or a second board of the same player, starts the next update;
    every other frame passes unchanged, between the updates around it.
    """
    packed: list[ServerMessage] = []
    progress: Progress | None = None
    boards: list[SpectatorBoard] = []
    players: set[str] = set()
    for message in messages:
        if type(message) is SpectatorBoard:
            if message.player_id in players:
                packed.append(SpectatorUpdate(progress, tuple(boards)))
                progress, boards = None, []
                players.clear()
            boards.append(message)
            players.add(message.player_id)
            continue
        if progress is not None or boards:
            packed.append(SpectatorUpdate(progress, tuple(boards)))
            progress, boards = None, []
            players.clear()
        if type(message) is Progress:
            progress = message
        else:
            packed.append(message)
    if progress is not None or boards:
        packed.append(SpectatorUpdate(progress, tuple(boards)))
    return packed
