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
