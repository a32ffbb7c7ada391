"""The log's shortcuts for the inputs it keeps most often write what the generic walk
writes, byte for byte, and read back as the input."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from protocol.wire.messages import MoveAction
from server.race import inputs
from server.recovery import codec

names = st.one_of(
    st.sampled_from(["progress", "countdown", "time_limit", "empty", "ghost"]),
    st.text(max_size=40).map(lambda text: f"grace:{text}"),
)
times = st.integers(min_value=0, max_value=2**53)


@given(names, times)
def test_a_fired_timer_is_written_as_the_generic_walk_writes_it(name: str, now_ms: int) -> None:
    fired = inputs.TimerFired(name, now_ms)
    text = codec.encode(fired)
    assert text == codec.encode_fields(fired)
    assert codec.decode(text) == fired


@given(
    st.text(min_size=1, max_size=40), st.integers(min_value=0, max_value=2**31),
    st.sampled_from(list(MoveAction)), st.none() | st.integers(min_value=0, max_value=27), times,
)
def test_a_move_is_written_as_the_generic_walk_writes_it(
    player_id: str, seq: int, action: MoveAction, position: int | None, now_ms: int
) -> None:
    move = inputs.Moved(player_id, seq, action, position, now_ms)
    text = codec.encode(move)
    assert text == codec.encode_fields(move)
    assert text == codec.encode_move(player_id, seq, action, position, now_ms)
    assert codec.decode(text) == move


def test_the_move_heads_of_more_players_than_are_kept_are_written_alike() -> None:
    """The per-player start of an encoded move is kept for at most ``_MOVE_HEADS_MAX``
    players; past that the keep is emptied and every move is still written right."""
    count = codec._MOVE_HEADS_MAX + 10
    for n in range(count):
        move = inputs.Moved(f"p{n}", n, MoveAction.DRAW, None, n)
        assert codec.encode(move) == codec.encode_fields(move)
        assert len(codec._MOVE_HEADS) <= codec._MOVE_HEADS_MAX
    assert 0 < len(codec._MOVE_HEADS) < count
    first = inputs.Moved("p0", 1, MoveAction.PLAY, 3, 5)
    assert codec.encode(first) == codec.encode_fields(first)
