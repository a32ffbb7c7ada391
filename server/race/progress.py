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

from collections.abc import Collection, Iterable, Mapping

from protocol.wire.messages import PlayerProgress, Progress, RoomOptions, SpectatorBoard
from server.race.outputs import Output, ToPlayers, ToSpectators
from server.race.race import Race, Racer
from server.race.room_types import Seat
from server.race.spectate import BoardsShown, shown_cards, spectator_view


def progress_frames(
    race: Race,
    seats: Mapping[str, Seat],
    boards: Iterable[SpectatorBoard],
    now_ms: int,
    *,
    with_progress: bool = True,
) -> list[Output]:
    """Every racer's progress line, to players and spectators (unless ``with_progress``
    is false), then ``boards`` (from :meth:`server.race.spectate.BoardsShown.changed`)
    to spectators."""
    elapsed = race.elapsed(race.end_ms or now_ms)
    outputs: list[Output] = []
    if with_progress:
        progress = Progress(elapsed, progress_lines(race, seats, elapsed))
        outputs += (ToPlayers(progress), ToSpectators(progress, "progress"))
    for board in boards:
        outputs.append(ToSpectators(board, "board:" + board.player_id))
    return outputs


def progress_lines(
    race: Race, seats: Mapping[str, Seat], elapsed: int
) -> tuple[PlayerProgress, ...]:
    """Every racer's :func:`progress_line` at race time ``elapsed``, in one pass (the
    flush's: positional arguments and no per-racer call)."""
    lines = []
    for pid, racer in race.racers.items():
        _top, stock_left, cleared, moves, _draws, undos, _status = racer.game.tally()
        seat = seats.get(pid)
        done = racer.done_ms
        lines.append(PlayerProgress(
            pid, cleared, stock_left, moves, undos, racer.status,
            elapsed if done is None else racer.finish_ms if racer.finish_ms is not None else done,
            seat is not None and seat.connected,
        ))
    return tuple(lines)


def current_frame(
    race: Race, seats: Mapping[str, Seat], key: str, open_boards: bool, now_ms: int
) -> Progress | SpectatorBoard | None:
    """The frame of spectator snapshot key ``key`` as the race stands at ``now_ms``: the
    progress line (``"progress"``) or a racer's board (``"board:<player>"``), made as a
    flush would make it now; ``None`` for any other key or an unknown racer."""
    kind, _, player_id = key.partition(":")
    elapsed = race.elapsed(race.end_ms or now_ms)
    if kind == "progress":
        return Progress(elapsed, progress_lines(race, seats, elapsed))
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


def progress_line(
    race: Race, racer: Racer, seats: Mapping[str, Seat], now_ms: int
) -> PlayerProgress:
    """One racer's line in the progress message; ``seats`` tells who is connected."""
    game = racer.game
    seat = seats.get(racer.player_id)
    if racer.done_ms is not None:
        elapsed = racer.finish_ms if racer.finish_ms is not None else racer.done_ms
    else:
        elapsed = race.elapsed(race.end_ms or now_ms)
    return PlayerProgress(
        player_id=racer.player_id,
        cleared=game.cleared,
        stock_left=game.stock_left,
        moves=game.moves,
        undos=game.undos,
        status=racer.status,
        elapsed_ms=elapsed,
        connected=seat is not None and seat.connected,
    )
