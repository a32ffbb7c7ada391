"""Races over real sockets: the full race, refusals, sequence numbers, undo, stuck, time limit."""

from __future__ import annotations

import asyncio
from functools import cache
from pathlib import Path

from protocol.deals.dealer import DealtGame, deal_for_seed
from protocol.rules.game import DRAW, Game, Rules, Status
from protocol.rules.refusals import Reason
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode
from tests.serverutil import TestClient, move_request, open_room, running_server

SEED = "42"


@cache
def dealt(seed: str = SEED, wrap: bool = True) -> DealtGame:
    return deal_for_seed(seed, Rules(wrap=wrap))


async def play_line(client: TestClient, line: tuple[object, ...], first_seq: int = 1) -> int:
    """Play ``line`` move by move, checking each is accepted; returns the next seq."""
    seq = first_seq
    for step in line:
        result = await client.request(move_request(seq, step), m.MoveResult)  # type: ignore[arg-type]
        assert result.accepted, result
        seq += 1
    return seq


async def test_four_players_race_the_dealt_winning_line_and_are_ranked_by_server_time(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        names = ["ann", "bob", "cyd", "dee"]
        clients, _ = await open_room(
            server.ws_url, names, practice_seed=SEED, undo=m.UndoPolicy.PENALTY, undo_penalty_s=5
        )
        host, bob, cyd, dee = clients
        await host.send(m.Start())
        starts = [await c.expect(m.RaceStart) for c in clients]
        assert len({s.race_id for s in starts}) == 1
        line = dealt().solution
        # cyd plays first but undoes once (a 5 s penalty); ann, bob, dee follow in that order.
        seq = await play_line(cyd, (DRAW,))
        undo = await cyd.request(m.MoveRequest(seq, m.MoveAction.UNDO), m.MoveResult)
        assert undo.accepted and undo.undone is m.MoveAction.DRAW and undo.penalty_ms == 5000
        await play_line(cyd, line, seq + 1)
        for client in (host, bob, dee):
            await play_line(client, line)
            await asyncio.sleep(0.02)
        over = await host.expect(m.RaceOver)
        order = [s.player_id for s in over.standings]
        assert order == [host.player_id, bob.player_id, dee.player_id, cyd.player_id]
        assert [s.rank for s in over.standings] == [1, 2, 3, 4]
        assert all(s.status is m.PlayerStatus.FINISHED and s.cleared == 28 for s in over.standings)
        times = [s.time_ms for s in over.standings]
        assert times == sorted(times)
        assert over.standings[3].penalty_ms == 5000 and over.standings[3].time_ms >= 5000
        assert over.ended_by is m.RaceEnd.ALL_DONE
        assert over.seed == SEED and over.solution == line and over.par == dealt().par
        assert over.deal == m.DealCodes.from_deal(dealt().deal)
        await asyncio.sleep(0.2)
        record = await server.store.get_race(over.race_id)
        assert record is not None and record.practice
        assert [p.player_id for p in record.players] == order
        assert [p.finish_ms for p in record.players] == times
        # The stored log replays to the same finish: one entry per move, server timestamps.
        cyd_log = record.players[3].log
        assert [e.action for e in cyd_log[:2]] == ["draw", "undo"]
        assert all(e.accepted for e in cyd_log)
        assert cyd_log[-1].at_ms + 5000 == record.players[3].finish_ms


async def test_finish_messages_announce_each_finisher_with_a_provisional_rank(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        clients, _ = await open_room(server.ws_url, ["ann", "bob"], practice_seed=SEED)
        ann, bob = clients
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        await bob.expect(m.RaceStart)
        await play_line(bob, dealt().solution)
        finish = await ann.expect(m.Finish)
        assert finish.player_id == bob.player_id and finish.rank == 1
        assert finish.moves == len(dealt().solution)


def _moves(action: m.MoveAction, seq: int, position: int | None = None) -> m.MoveRequest:
    return m.MoveRequest(seq, action, position)


async def test_every_refusal_reason_comes_back_with_its_code(tmp_path: Path) -> None:
    deal = dealt().deal
    game = Game(deal)
    covered = 0
    blocked = next(p for p in range(18, 28) if not game.fits(deal.peaks[p]))
    async with running_server(tmp_path) as server:
        (off,), _ = await open_room(server.ws_url, ["off"], practice_seed=SEED, undo="off")
        await off.send(m.Start())
        await off.expect(m.RaceStart)
        cases = [
            (_moves(m.MoveAction.PLAY, 1, covered), Reason.COVERED),
            (_moves(m.MoveAction.PLAY, 2, blocked), Reason.NOT_ADJACENT),
            (_moves(m.MoveAction.PLAY, 3, 28), Reason.NO_SUCH_POSITION),
            (_moves(m.MoveAction.UNDO, 4), Reason.UNDO_NOT_ALLOWED),
        ]
        for request, reason in cases:
            result = await off.request(request, m.MoveResult)
            assert not result.accepted and result.reason is reason, (request, result)
            assert result.uncovered == () and result.card is None

        # A second player keeps the race open after "free" wins.
        (free, _idle), _ = await open_room(
            server.ws_url, ["free", "idle"], practice_seed=SEED, undo="free"
        )
        await free.send(m.Start())
        await free.expect(m.RaceStart)
        result = await free.request(_moves(m.MoveAction.UNDO, 1), m.MoveResult)
        assert result.reason is Reason.NOTHING_TO_UNDO
        line = dealt().solution
        first_play = next(step for step in line if step != DRAW)
        seq = await play_line(free, line[: line.index(first_play) + 1], 2)
        result = await free.request(move_request(seq, first_play), m.MoveResult)
        assert result.reason is Reason.ALREADY_PLAYED
        seq = await play_line(free, line[line.index(first_play) + 1 :], seq + 1)
        result = await free.request(_moves(m.MoveAction.DRAW, seq), m.MoveResult)
        assert result.reason is Reason.GAME_OVER
        stuck_seed, drawn = stock_empty_seed()
        (drawer,), _ = await open_room(server.ws_url, ["drawer"], practice_seed=stuck_seed)
        await drawer.send(m.Start())
        await drawer.expect(m.RaceStart)
        seq = await play_line(drawer, (DRAW,) * drawn)
        result = await drawer.request(_moves(m.MoveAction.DRAW, seq), m.MoveResult)
        assert result.reason is Reason.STOCK_EMPTY


def stock_empty_seed() -> tuple[str, int]:
    """A seed whose stock can be drawn out with a card still playable after."""
    for n in range(500):
        seed = f"empty-{n}"
        game = Game(deal_for_seed(seed, Rules(), with_par=False).deal)
        while game.stock_left:
            game.draw()
        if game.status is Status.PLAYING:
            return seed, game.draws
    raise AssertionError("no seed found")


def stuck_seed() -> str:
    """A seed where drawing the whole stock leaves no card to play (stuck)."""
    for n in range(500):
        seed = f"stuck-{n}"
        game = Game(deal_for_seed(seed, Rules(), with_par=False).deal)
        while game.stock_left:
            game.draw()
        if game.status is Status.STUCK:
            return seed
    raise AssertionError("no seed found")


async def test_a_repeated_seq_returns_the_original_result_and_counts_once(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        (ann,), _ = await open_room(server.ws_url, ["ann"], practice_seed=SEED)
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        first = await ann.request(_moves(m.MoveAction.DRAW, 1), m.MoveResult)
        again = await ann.request(_moves(m.MoveAction.DRAW, 1), m.MoveResult)
        assert again == first and again.moves == 1 and again.stock_left == first.stock_left
        # A resend of a different move under a used number still answers the original.
        other = await ann.request(_moves(m.MoveAction.PLAY, 1, 18), m.MoveResult)
        assert other == first


async def test_a_seq_that_skips_ahead_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        (ann,), _ = await open_room(server.ws_url, ["ann"], practice_seed=SEED)
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        error = await ann.request(_moves(m.MoveAction.DRAW, 5), m.Error)
        assert error.code == ErrorCode.SEQ_OUT_OF_ORDER and error.seq == 5
        result = await ann.request(_moves(m.MoveAction.DRAW, 1), m.MoveResult)
        assert result.accepted and result.moves == 1


async def draw_until_stuck(player: TestClient) -> int:
    """Draw the whole stock of a deal that sticks; return the next sequence number."""
    seq = 1
    result = None
    while result is None or result.stock_left:
        result = await player.request(_moves(m.MoveAction.DRAW, seq), m.MoveResult)
        seq += 1
    assert result.status is Status.STUCK
    return seq


async def test_without_undo_a_stuck_player_is_out_and_the_race_ends(tmp_path: Path) -> None:
    seed = stuck_seed()
    async with running_server(tmp_path) as server:
        (ann,), _ = await open_room(server.ws_url, ["ann"], practice_seed=seed, undo="off")
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        await draw_until_stuck(ann)
        over = await ann.expect(m.RaceOver)
        assert over.standings[0].status is m.PlayerStatus.STUCK


async def test_with_undo_a_stuck_player_may_undo_back_into_the_race_or_resign(
    tmp_path: Path,
) -> None:
    seed = stuck_seed()
    async with running_server(tmp_path) as server:
        (ann,), _ = await open_room(server.ws_url, ["ann"], practice_seed=seed, undo="free")
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        seq = await draw_until_stuck(ann)
        progress = await ann.expect(m.Progress)
        while progress.players[0].status is not m.PlayerStatus.STUCK:
            progress = await ann.expect(m.Progress)
        undo = await ann.request(_moves(m.MoveAction.UNDO, seq), m.MoveResult)
        assert undo.accepted and undo.status is Status.PLAYING
        await ann.send(m.Resign())
        over = await ann.expect(m.RaceOver)
        assert over.standings[0].status is m.PlayerStatus.RESIGNED


async def test_the_time_limit_ends_the_race_and_times_out_who_is_still_racing(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        clients, _ = await open_room(
            server.ws_url, ["ann", "bob"], practice_seed=SEED, time_limit_s=1
        )
        ann, bob = clients
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        await play_line(bob, dealt().solution[:5])
        over = await ann.expect(m.RaceOver)
        assert over.ended_by is m.RaceEnd.TIME_LIMIT
        assert [s.player_id for s in over.standings] == [bob.player_id, ann.player_id]
        assert {s.status for s in over.standings} == {m.PlayerStatus.TIMED_OUT}
        record = None
        for _ in range(50):
            record = await server.store.get_race(over.race_id)
            if record:
                break
            await asyncio.sleep(0.05)
        assert record is not None and {p.status for p in record.players} == {"timeout"}


async def test_moves_before_the_race_starts_are_not_allowed(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        (ann,), _ = await open_room(server.ws_url, ["ann"], practice_seed=SEED, countdown_s=2)
        error = await ann.request(_moves(m.MoveAction.DRAW, 1), m.Error)
        assert error.code == ErrorCode.NOT_ALLOWED_NOW
        await ann.send(m.Start())
        countdown = await ann.expect(m.Countdown)
        assert countdown.seconds == 2
        error = await ann.request(_moves(m.MoveAction.DRAW, 1), m.Error)
        assert error.code == ErrorCode.NOT_ALLOWED_NOW
        start = await ann.expect(m.RaceStart)
        assert start.started_at_ms >= countdown.start_at_ms


async def test_accepted_moves_carry_only_the_newly_uncovered_cards(tmp_path: Path) -> None:
    deal = dealt().deal
    async with running_server(tmp_path) as server:
        (ann,), _ = await open_room(server.ws_url, ["ann"], practice_seed=SEED)
        await ann.send(m.Start())
        start = await ann.expect(m.RaceStart)
        assert [e for e in start.view.board[:18]] == ["??"] * 18
        game = Game(deal)
        for seq, step in enumerate(dealt().solution, 1):
            before = {p for p in range(28) if game.is_face_up(p)}
            game.push(step)
            result = await ann.request(move_request(seq, step), m.MoveResult)
            after = {p for p in range(28) if game.is_face_up(p) and not game.is_removed(p)}
            new = after - before
            assert {u.position for u in result.uncovered} == new
            assert all(u.card == game.view().board[u.position] for u in result.uncovered)
