"""What spectators may see, without sockets: the cards each racer has seen, the hidden
faces on spectator boards, the changed-boards-only flush, the catch-up order and a
spectator's reconnect grace."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.deals.dealer import deal_for_seed
from protocol.rules.cards import card_code
from protocol.rules.game import DRAW, HIDDEN, Game, Rules
from protocol.wire import messages as m
from server.race.outputs import Send, SetTimer, Snapshot, ToPlayers, ToSpectators
from server.race.race import Race
from server.race.room_types import Identity
from server.race.spectate import (
    ALL_CARDS,
    BoardsShown,
    SpectatorFeed,
    spectator_view,
    visible_cards,
)
from tests.server.race.test_core import DEALT, Clockwork, racing_room

STOCK = [card_code(card) for card in DEALT.deal.stock]


def codes(bits: int) -> set[str]:
    return {card_code(card) for card in range(52) if bits >> card & 1}


def faces(view: m.BoardView) -> set[str]:
    """The card codes a view names."""
    named = {entry for entry in view.board if entry is not None and entry != HIDDEN}
    return named | ({view.waste_top} if view.waste_top not in (None, HIDDEN) else set())


def race_of(players: int, rules: Rules | None = None, seed: str = "42") -> Race:
    deal = deal_for_seed(seed, rules or Rules(), with_par=False).deal
    names = [(f"p{n}", f"player{n}", False) for n in range(players)]
    return Race(deal, names, start_ms=0, allow_undo=True, undo_penalty_ms=0, time_limit_ms=10**9)


def boards_sent(clock: Clockwork) -> list[m.SpectatorBoard]:
    return [
        out.message
        for _, out in clock.frames
        if isinstance(out, ToSpectators) and isinstance(out.message, m.SpectatorBoard)
    ]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    empty_waste=st.booleans(),
    choices=st.lists(st.integers(0, 1000), max_size=80),
)
def test_a_racer_has_seen_exactly_every_card_that_was_ever_face_up_or_drawn(
    seed: int, empty_waste: bool, choices: list[int]
) -> None:
    rules = Rules(empty_waste=empty_waste)
    race = race_of(1, rules, f"seen-{seed}")
    racer = race.racers["p0"]
    game = Game(race.racers["p0"].game.deal, allow_undo=True)
    seen = faces(m.BoardView.from_view(game.view()))
    for seq, choice in enumerate(choices, start=1):
        legal = game.legal_moves()
        if game.history and (not legal or choice % 4 == 0):
            game.undo()
            race.move("p0", seq, m.MoveAction.UNDO, None, seq)
        elif legal:
            step = legal[choice % len(legal)]
            game.push(step)
            action = m.MoveAction.DRAW if step == DRAW else m.MoveAction.PLAY
            race.move("p0", seq, action, None if step == DRAW else step, seq)
        else:
            break
        seen |= faces(m.BoardView.from_view(game.view()))
        assert codes(racer.seen) == seen


def test_only_cards_every_racer_still_racing_has_seen_are_visible() -> None:
    race = race_of(3)
    start = race.seen_at_start
    assert visible_cards(race) == start
    race.move("p0", 1, m.MoveAction.DRAW, None, 10)
    race.move("p1", 1, m.MoveAction.DRAW, None, 10)
    race.move("p1", 2, m.MoveAction.DRAW, None, 20)
    stock = race.racers["p0"].game.deal.stock
    assert visible_cards(race) == start  # p2 has seen neither draw
    race.resign("p2", 30)
    assert visible_cards(race) == start | 1 << stock[0]
    race.resign("p0", 40)  # a racer who stopped no longer counts
    assert visible_cards(race) == start | 1 << stock[0] | 1 << stock[1]
    race.end(50)
    assert visible_cards(race) == ALL_CARDS


def test_a_spectator_view_hides_exactly_the_faces_not_yet_visible_board_and_waste() -> None:
    race = race_of(2)
    racer = race.racers["p0"]
    race.move("p0", 1, m.MoveAction.DRAW, None, 10)
    own = m.BoardView.from_view(racer.view())
    hidden = spectator_view(racer, visible_cards(race))
    assert own.waste_top == card_code(racer.game.deal.stock[0])
    assert hidden.waste_top == HIDDEN
    assert hidden.board == own.board  # the face-up row is seen by everyone from the start
    assert (hidden.stock_left, hidden.moves, hidden.draws) == (own.stock_left, 1, 1)
    assert spectator_view(racer, racer.seen & ~(1 << racer.game.deal.peaks[20])) != own
    only_row = spectator_view(racer, 0)
    assert faces(only_row) == set()
    assert [e is None for e in only_row.board] == [e is None for e in own.board]
    assert spectator_view(racer, ALL_CARDS) == own


def test_boards_shown_sends_only_changed_boards_and_rechecks_all_when_visibility_grows() -> None:
    race = race_of(2)
    shown = BoardsShown()
    assert [b.player_id for b in shown.changed(race, (), False, 0)] == ["p0", "p1"]
    assert shown.changed(race, ["p0", "p1"], False, 0) == []  # nothing changed
    race.move("p0", 1, m.MoveAction.DRAW, None, 10)
    (board,) = shown.changed(race, ["p0"], False, 10)
    assert board.view.waste_top == HIDDEN  # p1 has not drawn it yet
    race.move("p1", 1, m.MoveAction.DRAW, None, 20)
    # p1 moved; p0's board changed too for spectators: its waste card is now visible.
    boards = {b.player_id: b.view for b in shown.changed(race, ["p1"], False, 20)}
    assert set(boards) == {"p0", "p1"}
    assert boards["p0"].waste_top == boards["p1"].waste_top == STOCK[0]
    race.end(30)
    assert shown.changed(race, ["p0", "p1"], False, 30) == []  # race over, nothing new
    shown.forget()
    assert len(shown.changed(race, (), False, 30)) == 2


def test_with_open_boards_spectators_see_every_board_as_its_player_does() -> None:
    clock = racing_room(players=2, spectator_delay_s=30, open_boards=True)
    clock.feed(clock.room.join(Identity("s0", "eve"), m.Role.SPECTATOR, 0))
    clock.feed(clock.room.move("p0", m.MoveRequest(1, m.MoveAction.DRAW), 10))
    clock.advance(200)
    latest = {board.player_id: board.view for board in boards_sent(clock)}
    assert latest["p0"].waste_top == STOCK[0]
    race = clock.room.race
    assert race is not None
    assert latest == {pid: m.BoardView.from_view(r.view()) for pid, r in race.racers.items()}


def test_by_default_a_spectator_board_names_only_cards_every_racer_racing_has_seen() -> None:
    clock = racing_room(players=2)
    clock.feed(clock.room.join(Identity("s0", "eve"), m.Role.SPECTATOR, 0))
    for seq in (1, 2):
        clock.feed(clock.room.move("p0", m.MoveRequest(seq, m.MoveAction.DRAW), 10 * seq))
    clock.advance(200)
    assert boards_sent(clock)[-1].view.waste_top == HIDDEN
    clock.feed(clock.room.resign("p1", 300))  # p1 stops: only p0, who saw it, is racing
    clock.advance(500)
    assert boards_sent(clock)[-1].view.waste_top == STOCK[1]


def test_the_end_of_a_race_sends_spectators_only_the_boards_that_changed() -> None:
    clock = racing_room(players=2)
    clock.feed(clock.room.join(Identity("s0", "eve"), m.Role.SPECTATOR, 0))
    clock.feed(clock.room.move("p1", m.MoveRequest(1, m.MoveAction.DRAW), 10))
    clock.advance(200)
    before = len(boards_sent(clock))
    clock.feed(clock.room.resign("p1", 300))
    clock.feed(clock.room.resign("p0", 300))  # the race ends in the same instant
    assert clock.room.phase is m.Phase.FINISHED
    ended = boards_sent(clock)[before:]
    # Only p1's board changed for spectators (its waste card is no longer hidden).
    assert [(b.player_id, b.view.waste_top) for b in ended] == [("p1", STOCK[0])]


def test_the_catch_up_sends_each_kind_in_a_fixed_order_and_quiet_frames_only_there() -> None:
    feed: SpectatorFeed[str] = SpectatorFeed(delay_ms=0)
    feed.push(0, "start", "race", new_race=True)
    feed.push(1, "board-a1", "board:a")
    feed.push(2, "progress-1", "progress")
    feed.push(3, "finish-a", "finish:a")
    feed.push(4, "board-b1", "board:b", quiet=True)
    feed.push(5, "board-a2", "board:a")
    feed.push(6, "progress-2", "progress")
    assert feed.due(10) == [
        "start", "board-a1", "progress-1", "finish-a", "board-a2", "progress-2"
    ]
    assert feed.snapshot() == ["start", "progress-2", "board-a2", "board-b1", "finish-a"]


def test_a_spectator_who_drops_keeps_their_place_for_the_grace_and_comes_back_caught_up() -> None:
    clock = racing_room(players=1)
    room = clock.room
    clock.feed(room.join(Identity("s0", "eve"), m.Role.SPECTATOR, 0))
    dropped = room.disconnect("s0", 100)
    assert dropped == [SetTimer("grace:s0", 100 + room.timings.reconnect_grace_ms)]
    assert room.role_of("s0") is m.Role.SPECTATOR and room.state(m.Role.PLAYER).spectators == 1
    back = room.reconnect("s0", 200)
    assert back[1:] == [Send("s0", room.state(m.Role.SPECTATOR)), Snapshot("s0")]
    clock.feed(room.disconnect("s0", 300))
    clock.advance(300 + room.timings.reconnect_grace_ms)
    assert room.role_of("s0") is None
    states = [o.message for _, o in clock.frames if isinstance(o, ToPlayers)]
    assert isinstance(states[-1], m.RoomState) and states[-1].spectators == 0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 99)), min_size=1, max_size=120))
def test_no_spectator_board_ever_names_a_card_a_racer_still_racing_has_not_seen(
    steps: list[tuple[int, int]],
) -> None:
    clock = racing_room(players=3, undo=m.UndoPolicy.FREE)
    room = clock.room
    race = room.race
    assert race is not None
    clock.feed(room.join(Identity("s0", "eve"), m.Role.SPECTATOR, 0))
    games = {pid: Game(DEALT.deal, allow_undo=True) for pid in race.racers}
    seen = {pid: faces(m.BoardView.from_view(game.view())) for pid, game in games.items()}
    seqs = dict.fromkeys(games, 0)
    for index, (who, choice) in enumerate(steps):
        pid, game = f"p{who}", games[f"p{who}"]
        before = len(clock.frames)
        legal = game.legal_moves()
        if race.racers[pid].is_done:
            pass
        elif choice == 0:
            clock.feed(room.resign(pid, clock.now))
        elif legal or game.history:
            undo = not legal or (choice % 5 == 0 and bool(game.history))
            step = None if undo else legal[choice % len(legal)]
            seqs[pid] += 1
            if step is None:
                game.undo()
                request = m.MoveRequest(seqs[pid], m.MoveAction.UNDO)
            elif step == DRAW:
                game.push(step)
                request = m.MoveRequest(seqs[pid], m.MoveAction.DRAW)
            else:
                game.push(step)
                request = m.MoveRequest(seqs[pid], m.MoveAction.PLAY, step)
            clock.feed(room.move(pid, request, clock.now))
            seen[pid] |= faces(m.BoardView.from_view(game.view()))
        clock.advance(clock.now + 50 * (index % 3))
        racing = [p for p, racer in race.racers.items() if not racer.is_done and not race.over]
        allowed = set.intersection(*(seen[p] for p in racing)) if racing else None
        for _, out in clock.frames[before:]:
            if isinstance(out, ToSpectators) and isinstance(out.message, m.SpectatorBoard):
                assert allowed is None or faces(out.message.view) <= allowed
        if race.over:
            break
