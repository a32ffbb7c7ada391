"""What a room shows of a running race: the progress line and the spectator boards.

Plain functions over the room's state, pure like :mod:`server.race.room`, which
calls them from its progress flush (a few times a second per room, never on
the move path) and when the first spectator arrives.  Which boards, and what
of them spectators may see, is :mod:`server.race.spectate`'s.
:mod:`server.race.progress_flush` keeps the bookkeeping of *when* to flush
(which racers changed, when the next flush is due); this module builds *what*
is sent.
"""

from __future__ import annotations

from collections.abc import Collection

from protocol.wire.fast import BoardRow, ProgressRow, board_message, progress_message
from protocol.wire.messages import Progress, RoomOptions, SpectatorBoard
from server.race.outputs import Output, ToPlayers, ToSpectators
from server.race.race import Race
from server.race.room_types import Seat
from server.race.spectate import BoardsShown, shown_cards, spectator_view

#: A progress flush as plain rows: ``(elapsed_ms, lines, boards)`` at race time
#: ``elapsed_ms``: every racer's progress line (``None`` when the flush sends no
#: ``progress``), then the boards that changed, for spectators
#: (:meth:`server.race.spectate.BoardsShown.changed_rows`).  :func:`flush_frames` gives its
#: outputs; the hub's fast path writes its frames from the rows
#: (:mod:`protocol.wire.fast`).
FlushRows = tuple[int, tuple[ProgressRow, ...] | None, list[BoardRow]]


def flush_frames(rows: FlushRows) -> list[Output]:
    """The outputs of a flush: the ``progress`` line to players and spectators (when it
    has one), then each board to spectators."""
    elapsed, lines, boards = rows
    outputs: list[Output] = []
    if lines is not None:
        progress = progress_message(elapsed, lines)
        outputs += (ToPlayers(progress), ToSpectators(progress, "progress"))
    for row in boards:
        outputs.append(ToSpectators(board_message(row), "board:" + row[0]))
    return outputs


def progress_rows(
    race: Race, seats: dict[str, Seat], elapsed: int
) -> tuple[ProgressRow, ...]:
    """Every racer's progress line at race time ``elapsed`` as a row, in one pass (the
    flush's: no per-racer call, no message).  ``seats`` is a dict, not any mapping:
    compiled, its ``get`` is then a native call."""
    lines = []
    for pid, racer in race.racers.items():
        _top, stock_left, cleared, moves, _draws, undos, _status = racer.game.tally()
        seat = seats.get(pid)
        done = racer.done_ms
        lines.append((
            pid, cleared, stock_left, moves, undos, racer.status,
            elapsed if done is None else racer.finish_ms if racer.finish_ms is not None else done,
            seat is not None and seat.connected,
        ))
    return tuple(lines)


def current_frame(
    race: Race, seats: dict[str, Seat], key: str, open_boards: bool, now_ms: int
) -> Progress | SpectatorBoard | None:
    """The frame of spectator snapshot key ``key`` as the race stands at ``now_ms``: the
    progress line (``"progress"``) or a racer's board (``"board:<player>"``), made as a
    flush would make it now; ``None`` for any other key or an unknown racer."""
    kind, _, player_id = key.partition(":")
    elapsed = race.elapsed(race.end_ms or now_ms)
    if kind == "progress":
        return progress_message(elapsed, progress_rows(race, seats, elapsed))
    racer = race.racers.get(player_id) if kind == "board" else None
    if racer is None:
        return None
    visible = shown_cards(race, open_boards)
    view = spectator_view(racer, visible, race.positions, race.peak_cards)
    return SpectatorBoard(player_id, view, elapsed)


def boards_wanted(options: RoomOptions, spectators: Collection[str]) -> bool:
    """Boards cost time to build: skip them when no spectator can ever read them.

    With a spectator delay the feed must hold every board for late joiners;
    without one, a late joiner gets the current boards when joining.
    """
    if spectators:
        return True
    return options.allow_spectators and options.spectator_delay_s > 0


def catch_up_boards(
    race: Race | None, shown: BoardsShown, open_boards: bool, now_ms: int
) -> list[Output]:
    """Every racer's board as spectators may see it now, for the catch-up only (the
    first spectator of a room without delay: none were built while nobody watched)."""
    if race is None:
        return []
    shown.forget()
    return [
        ToSpectators(board, key="board:" + board.player_id, quiet=True)
        for board in shown.changed(race, (), open_boards, now_ms)
    ]

