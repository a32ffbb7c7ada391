"""A spectator feed without delay keeps marks, not frames, for the kinds it is told are
live (the progress line and the boards): its snapshot asks for the current frame of
each mark, in the catch-up order.  A feed with a delay keeps what it released."""

from __future__ import annotations

import gc

from server.race.spectate import LIVE_KINDS, SpectatorFeed


class Frame:
    """A tracked object standing for a message (what a kept frame would hold alive)."""

    def __init__(self, name: str) -> None:
        self.name = name


def test_a_feed_without_delay_marks_live_kinds_and_asks_for_them_at_the_catch_up() -> None:
    feed: SpectatorFeed[str] = SpectatorFeed(0, live=LIVE_KINDS)
    feed.release_now("race_start", "race", new_race=True)
    for frame, key in (("progress 1", "progress"), ("board b 1", "board:b"),
                       ("board a 1", "board:a"), ("finish a", "finish:a"),
                       ("progress 2", "progress")):
        assert feed.release_now(frame, key) is True
    asked: list[str] = []

    def current(key: str) -> str | None:
        asked.append(key)
        return None if key == "board:a" else f"now {key}"

    # In catch-up order; boards in the order first released; a mark made into nothing
    # (a racer no longer in the race) is left out.
    assert feed.snapshot(current) == ["race_start", "now progress", "now board:b", "finish a"]
    assert asked == ["progress", "board:b", "board:a"]
    assert feed.snapshot() == ["race_start", "finish a"]  # nothing to ask: marks left out
    feed.release_now("countdown", "countdown", new_race=True)
    assert feed.snapshot(current) == ["countdown"]  # a new race drops the marks too


def test_a_feed_keeps_no_live_frame_alive() -> None:
    feed: SpectatorFeed[Frame] = SpectatorFeed(0, live=LIVE_KINDS)
    frame = Frame("progress")
    feed.release_now(frame, "progress")
    assert not any(referrer is feed._snapshot for referrer in gc.get_referrers(frame))
    kept = Frame("race")
    feed.release_now(kept, "race")
    assert any(referrer is feed._snapshot for referrer in gc.get_referrers(kept))


def test_a_delayed_feed_keeps_the_frames_it_released_of_every_kind() -> None:
    feed: SpectatorFeed[str] = SpectatorFeed(1000, live=LIVE_KINDS)
    feed.push(0, "progress 1", "progress")
    feed.push(0, "board a 1", "board:a")
    assert feed.due(999) == []
    assert feed.due(1000) == ["progress 1", "board a 1"]
    feed.push(10, "progress 2", "progress")

    def current(key: str) -> str:
        raise AssertionError(f"a delayed feed asked for {key}")

    # What was released, not the newer frame still held back.
    assert feed.snapshot(current) == ["progress 1", "board a 1"]


def test_a_feed_told_of_no_live_kind_keeps_every_frame() -> None:
    feed: SpectatorFeed[str] = SpectatorFeed(0)
    feed.release_now("progress 1", "progress")
    feed.release_now("board a 1", "board:a")
    assert feed.snapshot() == ["progress 1", "board a 1"]
