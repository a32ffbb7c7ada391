"""A progress flush's frames written from rows are the codec's bytes of their messages.

``progress_msgpack``, ``update_msgpack`` and ``board_msgpack`` (the hub's flush
fast path) must write exactly what ``codec.encode_msgpack`` writes for the
``progress``, ``spectator_update`` and ``spectator_board`` messages built from
the same rows (``progress_message``, ``board_message``), whatever the rows hold:
ids of any length and script, counters past the ready-packed small integers,
hidden faces and empty places.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from protocol.rules.cards import ALL_CODES
from protocol.rules.game import HIDDEN, Status
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.fast import (
    BoardRow,
    ProgressRow,
    board_message,
    board_msgpack,
    progress_message,
    progress_msgpack,
    update_msgpack,
)

IDS = st.text(min_size=1, max_size=40)
#: Counters and times: small ones (ready packed), and past 2**14, 2**16 and 2**32.
COUNTS = st.one_of(st.integers(0, 300), st.sampled_from([16_383, 16_384, 65_536, 2**32 + 5]))
TIMES = st.one_of(st.integers(0, 20_000), st.integers(0, 2**40))
ENTRIES = st.one_of(st.none(), st.just(HIDDEN), st.sampled_from(ALL_CODES))


def _progress_rows(elapsed: int) -> st.SearchStrategy[list[ProgressRow]]:
    row = st.tuples(
        IDS, st.integers(0, 28), st.integers(0, 23), COUNTS, COUNTS,
        st.sampled_from(list(m.PlayerStatus)), st.one_of(st.just(elapsed), TIMES), st.booleans(),
    )
    return st.lists(row, max_size=m.MAX_PLAYERS)


BOARD_ROWS: st.SearchStrategy[BoardRow] = st.tuples(
    IDS, st.tuples(*[ENTRIES] * 28), ENTRIES, st.integers(0, 23), COUNTS, COUNTS, COUNTS,
    st.sampled_from(list(Status)), TIMES,
)
FLUSHES = TIMES.flatmap(lambda elapsed: st.tuples(
    st.just(elapsed), _progress_rows(elapsed), st.lists(BOARD_ROWS, max_size=m.MAX_PLAYERS)
))


@given(FLUSHES)
def test_a_progress_frame_from_rows_is_the_codecs_bytes_of_its_message(
    flush: tuple[int, list[ProgressRow], list[BoardRow]],
) -> None:
    elapsed, rows, _boards = flush
    assert progress_msgpack(elapsed, rows) == codec.encode_msgpack(progress_message(elapsed, rows))


@given(FLUSHES, st.booleans())
def test_an_update_from_rows_is_the_codecs_bytes_of_its_message(
    flush: tuple[int, list[ProgressRow], list[BoardRow]], with_progress: bool,
) -> None:
    elapsed, rows, boards = flush
    progress = progress_message(elapsed, rows) if with_progress else None
    update = m.SpectatorUpdate(progress, tuple(board_message(row) for row in boards))
    written = update_msgpack(progress_msgpack(elapsed, rows) if with_progress else None, boards)
    assert written == codec.encode_msgpack(update)


@given(BOARD_ROWS)
def test_a_board_frame_from_a_row_is_the_codecs_bytes_of_its_message(row: BoardRow) -> None:
    assert board_msgpack(row) == codec.encode_msgpack(board_message(row))
    assert board_message(row).view.waste_top == row[2]
