"""pack_updates: the progress and boards of one moment in one spectator_update, nothing
lost, nothing reordered, every other frame left between them."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from protocol.rules.game import Status
from protocol.wire import messages as m
from server.race.spectate import pack_updates

VIEW = m.BoardView(("??",) * 28, "KS", 23, 0, 0, 0, Status.PLAYING)
PLAYERS = ("pa", "pb", "pc")

frames = st.one_of(
    st.integers(0, 10**6).map(lambda ms: m.Progress(ms, ())),
    st.tuples(st.sampled_from(PLAYERS), st.integers(0, 10**6)).map(
        lambda pair: m.SpectatorBoard(pair[0], VIEW, pair[1])
    ),
    st.sampled_from(PLAYERS).map(lambda pid: m.Finish(pid, "x", 1, 1000, 30, 0)),
)


def unpacked(messages: list[m.ServerMessage]) -> list[m.ServerMessage]:
    out: list[m.ServerMessage] = []
    for message in messages:
        if isinstance(message, m.SpectatorUpdate):
            out += [message.progress] if message.progress is not None else []
            out += message.boards
        else:
            out.append(message)
    return out


@given(st.lists(frames, max_size=30))
def test_packing_keeps_every_frame_in_order(messages: list[m.ServerMessage]) -> None:
    packed = pack_updates(messages)
    assert unpacked(packed) == messages
    assert not any(isinstance(f, m.Progress | m.SpectatorBoard) for f in packed)


@given(st.lists(frames, max_size=30))
def test_an_update_holds_one_moment_at_most_one_board_per_player(
    messages: list[m.ServerMessage],
) -> None:
    for update in pack_updates(messages):
        if isinstance(update, m.SpectatorUpdate):
            ids = [board.player_id for board in update.boards]
            assert len(ids) == len(set(ids))
            assert update.progress is not None or update.boards


def test_a_flush_of_progress_and_two_boards_is_one_frame() -> None:
    progress = m.Progress(900, ())
    boards = [m.SpectatorBoard(pid, VIEW, 900) for pid in PLAYERS[:2]]
    finish = m.Finish("pa", "x", 1, 1000, 30, 0)
    assert pack_updates([progress, *boards, finish]) == [
        m.SpectatorUpdate(progress, tuple(boards)),
        finish,
    ]


@given(st.lists(frames, max_size=30))
def test_an_update_ends_only_at_another_progress_a_players_second_board_or_another_frame(
    messages: list[m.ServerMessage],
) -> None:
    packed = pack_updates(messages)
    # Each update but the last of a run was closed by what starts the next one.
    for update, after in pairwise(packed):
        if isinstance(update, m.SpectatorUpdate) and isinstance(after, m.SpectatorUpdate):
            ids = {board.player_id for board in update.boards}
            assert after.progress is not None or after.boards[0].player_id in ids
