"""Spectators and the leak scan: nobody sees a card before its player legitimately could."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import re
from pathlib import Path

import pytest

from protocol.deals.dealer import deal_for_seed
from protocol.rules.cards import ALL_CODES
from protocol.rules.game import Game, Move, Rules
from protocol.wire import messages as m
from protocol.wire.errors import ErrorCode
from tests.serverutil import TestClient, connect, move_request, open_room, running_server

CODES = frozenset(ALL_CODES)
CODE_IN_TEXT = re.compile(r"\b[A2-9TJQK][CDHS]\b")


def cards_in(value: object) -> set[str]:
    """Every card code anywhere in a decoded message."""
    found: set[str] = set()
    if isinstance(value, str):
        if value in CODES:
            found.add(value)
    elif isinstance(value, enum.Enum):
        pass
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for spec in dataclasses.fields(value):
            found |= cards_in(getattr(value, spec.name))
        if isinstance(value, m.Error):
            found |= set(CODE_IN_TEXT.findall(value.message))
    elif isinstance(value, tuple | list):
        for item in value:
            found |= cards_in(item)
    return found


def visible(game: Game) -> set[str]:
    view = game.view()
    cards = {entry for entry in view.board if entry not in (None, "??")}
    return cards | ({view.waste_top} if view.waste_top else set())


@dataclasses.dataclass
class Mirror:
    """What one player has legitimately seen, replayed from their own move results."""

    game: Game
    seen: set[str]
    views: set[m.BoardView]

    def note(self) -> None:
        self.seen |= visible(self.game)
        self.views.add(m.BoardView.from_view(self.game.view()))


def check_player_frames(client: TestClient, game: Game) -> Mirror:
    """Walk a player's frames in order; every card must be one the player has seen."""
    mirror: Mirror | None = None
    for frame in client.frames:
        if isinstance(frame, m.RaceOver):
            break
        if isinstance(frame, m.RaceStart):
            mirror = Mirror(game, set(), set())
            mirror.note()
            assert m.BoardView.from_view(game.view()) == frame.view
        elif isinstance(frame, m.MoveResult) and frame.accepted:
            assert mirror is not None
            if frame.action is m.MoveAction.UNDO:
                mirror.game.undo()
            elif frame.action is m.MoveAction.DRAW:
                mirror.game.draw()
            else:
                assert frame.position is not None
                mirror.game.play(frame.position)
            mirror.note()
        leaked = cards_in(frame) - (mirror.seen if mirror else set())
        assert not leaked, f"{client.player_id} received {sorted(leaked)} too early in {frame}"
    assert mirror is not None
    return mirror


def check_spectator_frames(client: TestClient, mirrors: dict[str, Mirror], start: Game) -> int:
    """Every board a spectator sees is one its player saw; no other frame carries cards."""
    boards = 0
    initial = visible(start)
    for frame in client.frames:
        if isinstance(frame, m.RaceOver):
            break
        if isinstance(frame, m.SpectatorBoard):
            assert frame.view in mirrors[frame.player_id].views, frame
            boards += 1
        elif isinstance(frame, m.RaceStart):
            assert cards_in(frame) <= initial
        else:
            assert not cards_in(frame), frame
    return boards


async def play(client: TestClient, line: tuple[Move, ...], style: str) -> None:
    """Play ``line`` with detours that exercise refusals and undo."""
    seq = 1
    for index, step in enumerate(line):
        if style == "detours" and index % 5 == 0:
            await client.request(m.MoveRequest(seq, m.MoveAction.PLAY, 0), m.MoveResult)
            seq += 1
            result = await client.request(m.MoveRequest(seq, m.MoveAction.DRAW), m.MoveResult)
            seq += 1
            if result.accepted:
                await client.request(m.MoveRequest(seq, m.MoveAction.UNDO), m.MoveResult)
                seq += 1
        if style == "quitter" and index == len(line) // 2:
            await client.send(m.Resign())
            return
        result = await client.request(move_request(seq, step), m.MoveResult)
        assert result.accepted, result
        seq += 1
        await asyncio.sleep(0)


@pytest.mark.parametrize(
    "rules", [Rules(), Rules(wrap=False, empty_waste=True)], ids=["standard", "no-wrap-empty-waste"]
)
async def test_leak_scan_no_card_reaches_anyone_before_it_was_legitimately_seen(
    tmp_path: Path, rules: Rules
) -> None:
    seed = "leak-scan"
    dealt = deal_for_seed(seed, rules)
    async with running_server(tmp_path, progress_hz=50, player_burst=1000) as server:
        clients, state = await open_room(
            server.ws_url,
            ["ann", "bob", "cyd"],
            practice_seed=seed,
            wrap=rules.wrap,
            empty_waste=rules.empty_waste,
            undo=m.UndoPolicy.FREE,
        )
        watchers = [
            await connect(server.ws_url, "eve", encoding="json"),
            await connect(server.ws_url, "fay", encoding="msgpack"),
        ]
        for watcher in watchers:
            await watcher.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        await clients[0].send(m.Start())
        for client in clients:
            await client.expect(m.RaceStart)
        styles = ["straight", "detours", "quitter"]
        await asyncio.gather(
            *(play(c, dealt.solution, s) for c, s in zip(clients, styles, strict=True))
        )
        for client in clients + watchers:
            await client.expect(m.RaceOver)
        mirrors = {
            c.player_id: check_player_frames(c, Game(dealt.deal, allow_undo=True)) for c in clients
        }
        for watcher in watchers:
            boards = check_spectator_frames(watcher, mirrors, Game(dealt.deal))
            assert boards >= 3  # the scan really looked at boards
        # The scan can see cards at all: race_over reveals the whole deal.
        over = next(f for f in clients[0].frames if isinstance(f, m.RaceOver))
        assert len(cards_in(over)) == 52


async def test_a_spectator_sees_each_board_only_after_the_spectator_delay(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        (ann,), state = await open_room(
            server.ws_url, ["ann"], practice_seed="42", spectator_delay_s=1
        )
        eve = await connect(server.ws_url, "eve")
        await eve.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        loop = asyncio.get_running_loop()
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        moved_at = loop.time()
        await ann.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        board = await eve.expect(m.SpectatorBoard)
        seen_at = loop.time()
        assert board.player_id == ann.player_id and board.view.draws == 1
        assert seen_at - moved_at >= 0.95
        # The race start reached the spectator late too, before the board.
        kinds = [type(f) for f in eve.frames]
        assert kinds.index(m.RaceStart) < kinds.index(m.SpectatorBoard)


async def test_a_late_spectator_first_gets_the_latest_board_of_every_player(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        clients, state = await open_room(server.ws_url, ["ann", "bob"], practice_seed="42")
        ann, bob = clients
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        await bob.expect(m.RaceStart)
        await ann.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        await bob.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        await bob.request(m.MoveRequest(2, m.MoveAction.DRAW), m.MoveResult)
        await asyncio.sleep(0.3)
        eve = await connect(server.ws_url, "eve")
        await eve.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        await eve.expect(m.RaceStart)
        boards = {}
        while len(boards) < 2:
            board = await eve.expect(m.SpectatorBoard)
            boards[board.player_id] = board.view.draws
        assert boards == {ann.player_id: 1, bob.player_id: 2}
        progress = await eve.expect(m.Progress)
        assert {p.player_id for p in progress.players} == {ann.player_id, bob.player_id}


async def test_spectators_cannot_move_and_are_counted_in_the_room_state(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        (ann,), state = await open_room(server.ws_url, ["ann"], practice_seed="42")
        eve = await connect(server.ws_url, "eve")
        await eve.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        update = await ann.expect(m.RoomState)
        assert update.spectators == 1 and len(update.members) == 1
        await ann.send(m.Start())
        await eve.expect(m.RaceStart)
        error = await eve.request(m.MoveRequest(1, m.MoveAction.DRAW), m.Error)
        assert error.code == ErrorCode.NOT_ALLOWED_NOW


async def test_a_racing_member_cannot_also_spectate_the_same_room(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        (ann,), state = await open_room(server.ws_url, ["ann"], practice_seed="42")
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        error = await ann.request(m.Join(state.code, m.Role.SPECTATOR), m.Error)
        assert error.code == ErrorCode.ALREADY_IN_ROOM
        # The same player on a second connection (same token) replaces the first one
        # and is still the racer, not a spectator.
        assert ann.welcome is not None
        again = await connect(server.ws_url, "ann", token=ann.welcome.token)
        resync = await again.expect(m.Resync)
        assert resync.phase is m.Phase.RACING
        error = await again.request(m.Join(state.code, m.Role.SPECTATOR), m.Error)
        assert error.code == ErrorCode.ALREADY_IN_ROOM


def test_cards_in_finds_codes_in_nested_messages_and_error_text() -> None:
    view = m.BoardView(
        ("??",) * 18 + ("AS",) * 10,
        "KD",
        23,
        0,
        0,
        0,
        Game(deal_for_seed("1", Rules()).deal).status,
    )
    assert cards_in(m.SpectatorBoard("p", view, 0)) == {"AS", "KD"}
    assert cards_in(m.Error(1, "the QH is under there")) == {"QH"}
    assert cards_in(m.Progress(0, ())) == set()
