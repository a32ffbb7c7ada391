"""Spectators and the leak scan: nobody sees a card before its player legitimately could."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
import re
from pathlib import Path

import pytest

from protocol.deals.dealer import deal_for_seed
from protocol.rules.cards import ALL_CODES, card_code
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


def shows_as(board: m.BoardView, views: set[m.BoardView]) -> bool:
    """Whether ``board`` is one of ``views`` with some card faces turned down."""

    def hides(shown: str | None, own: str | None) -> bool:
        return shown == own or (shown == "??" and own is not None)

    return any(
        dataclasses.replace(board, board=own.board, waste_top=own.waste_top) == own
        and hides(board.waste_top, own.waste_top)
        and all(hides(a, b) for a, b in zip(board.board, own.board, strict=True))
        for own in views
    )


def still_racing(progress: m.Progress | None, players: set[str], undo: bool) -> set[str]:
    """Who is still racing by the latest ``progress`` (stuck counts while undo is on)."""
    if progress is None:
        return players
    racing = {m.PlayerStatus.RACING} | ({m.PlayerStatus.STUCK} if undo else set())
    return {line.player_id for line in progress.players if line.status in racing}


def check_spectator_frames(client: TestClient, mirrors: dict[str, Mirror], undo: bool) -> int:
    """Until the race is over, no spectator frame names a card that some racer still
    racing has not seen; every board is its player's own with some faces turned down."""
    boards = 0
    progress: m.Progress | None = None
    for frame in client.frames:
        if isinstance(frame, m.RaceOver):
            break
        if isinstance(frame, m.Progress):
            progress = frame
        racing = still_racing(progress, set(mirrors), undo)
        allowed = set(CODES)
        for pid in racing:
            allowed &= mirrors[pid].seen
        leaked = cards_in(frame) - allowed
        assert not leaked, f"{sorted(leaked)} not yet seen by one of {sorted(racing)}: {frame}"
        if isinstance(frame, m.SpectatorBoard):
            assert shows_as(frame.view, mirrors[frame.player_id].views), frame
            boards += 1
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
            ["ann", "bob", "cyd", "dan"],
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
        # dan makes three moves and stays in the race until the others are done: while
        # he races, spectators may see no card he has not seen, however far the others get.
        await play(clients[3], dealt.solution[:3], "straight")
        await asyncio.gather(
            *(play(c, dealt.solution, s) for c, s in zip(clients, styles, strict=False))
        )
        await asyncio.sleep(0.1)  # the others' last boards go out while dan still races
        await clients[3].send(m.Resign())
        for client in clients + watchers:
            await client.expect(m.RaceOver)
        mirrors = {
            c.player_id: check_player_frames(c, Game(dealt.deal, allow_undo=True)) for c in clients
        }
        for watcher in watchers:
            boards = check_spectator_frames(watcher, mirrors, undo=True)
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


async def until_quiet(
    client: TestClient, quiet: float = 0.4, *, first: float | None = None
) -> list[m.ServerMessage]:
    """Every frame that arrives until none has for ``quiet`` seconds; with ``first``, the
    first frame may take that long (a loaded machine answers a resume slowly)."""
    frames: list[m.ServerMessage] = []
    if first is not None:
        frames.append(await client.recv(timeout=first))
    while True:
        try:
            frames.append(await client.recv(timeout=quiet))
        except TimeoutError:
            return frames


CATCH_UP = [m.RoomState, m.RaceStart, m.Progress, m.SpectatorBoard, m.SpectatorBoard]
STOCK_42 = [card_code(card) for card in deal_for_seed("42", Rules()).deal.stock]


@pytest.mark.parametrize("watched", [False, True], ids=["first-spectator", "second-spectator"])
async def test_a_spectator_joining_mid_race_gets_room_race_start_progress_then_each_board_once(
    tmp_path: Path, watched: bool
) -> None:
    async with running_server(tmp_path) as server:
        clients, state = await open_room(server.ws_url, ["ann", "bob"], practice_seed="42")
        ann, bob = clients
        if watched:
            fay = await connect(server.ws_url, "fay")
            await fay.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        await bob.expect(m.RaceStart)
        await ann.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        await bob.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        await bob.request(m.MoveRequest(2, m.MoveAction.DRAW), m.MoveResult)
        await asyncio.sleep(0.4)  # the progress flush has gone out
        eve = await connect(server.ws_url, "eve")
        await eve.send(m.Join(state.code, m.Role.SPECTATOR))
        frames = await until_quiet(eve, first=10)
        assert [type(f) for f in frames] == CATCH_UP
        progress = frames[2]
        assert isinstance(progress, m.Progress)
        assert [p.moves for p in progress.players] == [1, 2]
        boards = {f.player_id: f.view for f in frames if isinstance(f, m.SpectatorBoard)}
        assert {pid: view.draws for pid, view in boards.items()} == {
            ann.player_id: 1, bob.player_id: 2
        }
        # Both have seen the first stock card; only bob has seen the second.
        assert boards[ann.player_id].waste_top == STOCK_42[0]
        assert boards[bob.player_id].waste_top == "??"


async def test_a_spectator_sync_gets_the_room_and_the_catch_up_never_a_resync(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        clients, state = await open_room(server.ws_url, ["ann", "bob"], practice_seed="42")
        eve = await connect(server.ws_url, "eve")
        await eve.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        await clients[0].send(m.Start())
        await clients[0].expect(m.RaceStart)
        await clients[0].request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        await until_quiet(eve)
        await eve.send(m.Sync())
        frames = await until_quiet(eve, first=10)
        assert [type(f) for f in frames] == CATCH_UP
        room = frames[0]
        assert isinstance(room, m.RoomState) and room.your_role is m.Role.SPECTATOR


async def test_by_default_a_spectator_sees_a_card_only_once_every_racer_racing_has_seen_it(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        clients, state = await open_room(server.ws_url, ["ann", "bob"], practice_seed="42")
        ann, bob = clients
        eve = await connect(server.ws_url, "eve")
        await eve.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        await ann.send(m.Start())
        await bob.expect(m.RaceStart)

        async def board_of(player: TestClient, draws: int) -> m.BoardView:
            while True:
                board = await eve.expect(m.SpectatorBoard)
                eve.drop_unread()
                if board.player_id == player.player_id and board.view.draws == draws:
                    return board.view

        await bob.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        assert (await board_of(bob, 1)).waste_top == "??"  # ann has not drawn it
        await ann.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        assert (await board_of(ann, 1)).waste_top == STOCK_42[0]
        await ann.send(m.Resign())  # ann stops: only bob, who has seen it all, still races
        await bob.request(m.MoveRequest(2, m.MoveAction.DRAW), m.MoveResult)
        assert (await board_of(bob, 2)).waste_top == STOCK_42[1]


async def test_at_the_end_of_a_race_spectators_get_only_the_boards_that_changed(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        clients, state = await open_room(server.ws_url, ["ann", "bob"], practice_seed="42")
        ann, bob = clients
        eve = await connect(server.ws_url, "eve")
        await eve.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        await ann.send(m.Start())
        await bob.expect(m.RaceStart)
        await bob.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        await bob.send(m.Resign())
        await until_quiet(eve)
        await ann.send(m.Resign())
        await eve.expect(m.RaceOver)
        frames = eve.frames
        last = max(i for i, f in enumerate(frames) if isinstance(f, m.Progress))
        over = next(i for i, f in enumerate(frames) if isinstance(f, m.RaceOver))
        ended = [f for f in frames[last:over] if isinstance(f, m.SpectatorBoard)]
        # Only bob's board looks different now: its waste card, which ann never drew,
        # shows once nobody races any more.  ann's board has not changed.
        assert [(b.player_id, b.view.waste_top) for b in ended] == [
            (bob.player_id, STOCK_42[0])
        ]


async def test_a_spectator_who_drops_resumes_with_the_token_and_is_caught_up(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        (ann,), state = await open_room(server.ws_url, ["ann"], practice_seed="42")
        eve = await connect(server.ws_url, "eve")
        await eve.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        await ann.send(m.Start())
        await eve.expect(m.RaceStart)
        assert eve.welcome is not None
        await eve.close()
        await ann.request(m.MoveRequest(1, m.MoveAction.DRAW), m.MoveResult)
        await asyncio.sleep(0.4)
        again = await connect(server.ws_url, "eve", token=eve.welcome.token)
        assert again.welcome is not None and again.welcome.resumed
        assert again.player_id == eve.player_id
        frames = await until_quiet(again, first=10)
        assert [type(f) for f in frames] == CATCH_UP[:-1]
        room, board = frames[0], frames[-1]
        assert isinstance(room, m.RoomState) and room.your_role is m.Role.SPECTATOR
        assert room.spectators == 1
        assert isinstance(board, m.SpectatorBoard) and board.view.draws == 1
        await ann.request(m.MoveRequest(2, m.MoveAction.DRAW), m.MoveResult)
        assert (await again.expect(m.SpectatorBoard)).view.draws == 2  # live again
        error = await again.request(m.MoveRequest(1, m.MoveAction.DRAW), m.Error)
        assert error.code == ErrorCode.NOT_ALLOWED_NOW  # still a spectator


async def test_a_spectator_gone_past_the_grace_has_left_and_the_token_is_forgotten(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path, reconnect_grace_s=0.3) as server:
        (ann,), state = await open_room(server.ws_url, ["ann"], practice_seed="42")
        eve = await connect(server.ws_url, "eve")
        await eve.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        assert (await ann.expect(m.RoomState)).spectators == 1
        assert eve.welcome is not None
        await eve.close()
        assert (await ann.expect(m.RoomState)).spectators == 0
        again = await connect(server.ws_url, "eve", token=eve.welcome.token)
        assert again.welcome is not None and not again.welcome.resumed
        assert again.player_id != eve.player_id


@pytest.mark.parametrize("delay", [0, m.OPEN_BOARDS_MIN_DELAY_S - 1])
async def test_open_boards_are_refused_without_the_minimum_spectator_delay(
    tmp_path: Path, delay: int
) -> None:
    async with running_server(tmp_path) as server:
        host = await connect(server.ws_url, "ann", encoding="json")
        options = {"open_boards": True, "spectator_delay_s": delay}
        await host.send_raw(json.dumps({"t": "create_room", "options": options}))
        error = await host.expect(m.Error)
        assert error.code == ErrorCode.INVALID_COMBINATION
        assert "options.open_boards" in error.message
        options["spectator_delay_s"] = m.OPEN_BOARDS_MIN_DELAY_S
        await host.send_raw(json.dumps({"t": "create_room", "options": options}))
        room = await host.expect(m.RoomState)
        assert room.options.open_boards and room.options.spectator_delay_s == 30


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
