"""The spectators' boards as the progress flush builds them (from the game's board and
counters, each board kept until its racer moves or the visible cards change) are
exactly the boards the plain rule gives: each racer's own view with every face not
yet visible hidden, sent whenever it differs from what spectators were last shown."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.rules.game import DRAW, HIDDEN, Rules
from protocol.wire import messages as m
from server.race.race import Race, Racer
from server.race.spectate import ALL_CARDS, BoardsShown, spectator_view, visible_cards
from tests.server.race.test_spectate_rules import race_of


def plain_view(racer: Racer, visible: int) -> m.BoardView:
    """The rule itself: the racer's own view, every face not in ``visible`` hidden."""
    view = racer.view()
    board = tuple(
        entry if entry is None or entry == HIDDEN or visible >> card & 1 else HIDDEN
        for entry, card in zip(view.board, racer.game.deal.peaks, strict=True)
    )
    top = racer.game.waste_top
    waste = view.waste_top if top is None or visible >> top & 1 else HIDDEN
    return m.BoardView(
        board, waste, view.stock_left, view.moves, view.draws, view.undos, view.status
    )


def step(race: Race, pid: str, choice: int, seq: int) -> bool:
    """One move of ``pid`` picked by ``choice`` (undo, draw or a legal play); False when
    the racer can do nothing."""
    racer = race.racers[pid]
    if racer.is_done:
        return False
    game = racer.game
    legal = game.legal_moves()
    if game.history and (not legal or choice % 5 == 0):
        race.move(pid, seq, m.MoveAction.UNDO, None, seq)
    elif legal:
        move = legal[choice % len(legal)]
        action = m.MoveAction.DRAW if move == DRAW else m.MoveAction.PLAY
        race.move(pid, seq, action, None if move == DRAW else move, seq)
    else:
        return False
    return True


plays = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1000)), max_size=120)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10_000), empty_waste=st.booleans(), moves=plays,
       masks=st.lists(st.integers(0, ALL_CARDS), min_size=1, max_size=4))
def test_a_spectator_view_is_the_racers_own_view_with_the_faces_not_visible_hidden(
    seed: int, empty_waste: bool, moves: list[tuple[int, int]], masks: list[int]
) -> None:
    race = race_of(3, Rules(empty_waste=empty_waste), f"view-{seed}")
    seqs = dict.fromkeys(race.racers, 0)
    for who, choice in moves:
        pid = f"p{who}"
        seqs[pid] += 1
        if not step(race, pid, choice, seqs[pid]):
            seqs[pid] -= 1
        for visible in (visible_cards(race), 0, ALL_CARDS, *masks):
            for racer in race.racers.values():
                assert spectator_view(racer, visible) == plain_view(racer, visible)
                assert spectator_view(racer, visible, race.positions) == plain_view(racer, visible)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 10_000), moves=plays, stops=st.lists(st.integers(0, 2), max_size=3),
       flush_every=st.integers(1, 6))
def test_each_flush_sends_exactly_the_boards_that_differ_from_the_last_shown(
    seed: int, moves: list[tuple[int, int]], stops: list[int], flush_every: int
) -> None:
    race = race_of(3, seed=f"flush-{seed}")
    shown = BoardsShown()
    last: dict[str, m.BoardView] = {}
    seqs = dict.fromkeys(race.racers, 0)
    moved: set[str] = set()

    def flush(now: int) -> None:
        visible = visible_cards(race)
        expected = {}
        for pid, racer in race.racers.items():
            view = plain_view(racer, visible)
            if last.get(pid) != view:
                expected[pid] = view
                last[pid] = view
        boards = shown.changed(race, moved, False, now)
        assert {board.player_id: board.view for board in boards} == expected
        assert [board.player_id for board in boards] == list(expected)  # in seat order
        moved.clear()

    for n, (who, choice) in enumerate(moves, 1):
        pid = f"p{who}"
        seqs[pid] += 1
        if step(race, pid, choice, seqs[pid]):
            moved.add(pid)
        else:
            seqs[pid] -= 1
        if n % flush_every == 0:
            flush(n)
        if stops and n == 40:
            for who in stops:
                race.resign(f"p{who}", n)
                moved.add(f"p{who}")
            flush(n)
    race.end(len(moves) + 1)
    flush(len(moves) + 1)
