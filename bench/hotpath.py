"""Micro-benchmark of the server's move fast path: CPU time per move, frame bytes to answer bytes.

``python -m bench.hotpath [--rooms 50] [--moves 200000] [--repeat 5] [--profile] [--fanout]``

(``--profile`` profiles the last round: the moves, or with ``--fanout`` the flushes.)

It builds a real :class:`~server.hub.Hub` with racing rooms of 4 (the load
benchmark's room options) and connections whose socket is a byte sink, then
feeds :meth:`~server.hub.Hub.fast_move` a recorded stream of move frames
played by the load generator's greedy player (which undoes a run of 6 when
stuck): about 17% plays, 37% draws and 46% undos, near the saturation run's
15/35/50.  Each frame also gets what ``app`` does around the fast path (the
clock and the rate-limit credit; not the reader's poll of the journal and the flush
slots, as the fanout runs the flushes itself), and each answer is framed and written to a
byte sink by ``Connection.send``, so the figure is the server's CPU per move
from frame bytes to answer bytes, without the socket's reads and writes.

The stream is recorded once, by playing through the fast path itself, and
replayed on fresh rooms of the same deals for every timed round, so every
round answers the same moves the same way.  The figure is the best of
``--repeat`` rounds of ``time.process_time``.

Each round runs twice: without the input log, and with it (a
:class:`~server.recovery.journal.Journal` on a SQLite file, as the server runs
by default).  With the log the loop yields every ``--turn`` moves, as the
server's read loop does between batches of frames, so the journal commits
while moves go on; the round ends once the last entry is committed.
``process_time`` counts every thread, so the log's figure holds the encoding,
the commits on the log's own thread and the held answers.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import pstats
import random
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import msgpack

from bench.load_game import FITS, HIDDEN, UNDO_RUN, move_frame, room_options
from protocol.deals.dealer import DealtGame, deal_for_seed
from protocol.rules.game import Rules
from protocol.wire import messages as m
from protocol.wire.codec import Encoding
from server.config import Settings
from server.hub import Hub
from server.hub_rooms import RoomHandle
from server.race.lobby import NewPlayer
from server.race.room import Room
from server.race.room_types import Fresh, Identity
from server.race.spectate import LIVE_KINDS, SpectatorFeed
from server.recovery.journal import Journal
from server.storage.inputlog import SqlInputLog
from server.storage.store import RaceStore
from server.transport.connection import Connection


class _Sink:
    """A socket transport that takes every write and keeps the last one."""

    writes = 0

    def __init__(self) -> None:
        self.last = b""

    def write(self, data: bytes) -> None:
        self.last = data
        _Sink.writes += 1

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass


class _OpenSocket:
    """The WebSocket response as a connection's writes read it (``closed``, and aiohttp's
    ``_closed`` flag behind it)."""

    closed = False
    _closed = False


class _Seat:
    """One player of the recording pass: the load generator's strategy, on the answers."""

    def __init__(self, conn: Connection, sink: _Sink, board: list[str | None], top: str | None,
                 stock: int, rng: random.Random) -> None:
        self.conn, self.sink, self.rng = conn, sink, rng
        self.board, self.top, self.stock = board, top, stock
        self.cleared = self.depth = self.undo_run = self.seq = 0

    def next_frame(self) -> bytes:
        self.seq += 1
        if self.undo_run > 0 and self.depth > 0:
            self.undo_run -= 1
            return move_frame(self.seq, m.MoveAction.UNDO, None)
        self.undo_run = 0
        fitting = FITS[self.top] if self.top is not None else None
        playable = [
            p for p, card in enumerate(self.board)
            if card is not None and card != HIDDEN and (fitting is None or card in fitting)
        ]
        if playable and self.cleared < 27:
            return move_frame(self.seq, m.MoveAction.PLAY, self.rng.choice(playable))
        if not playable and self.stock > 0:
            return move_frame(self.seq, m.MoveAction.DRAW, None)
        self.undo_run = UNDO_RUN - 1
        return move_frame(self.seq, m.MoveAction.UNDO, None)

    def read_answer(self) -> str:
        data = self.sink.last
        answer = msgpack.unpackb(data[4:] if data[1] == 126 else data[2:])
        assert answer["t"] == "move_result" and answer["accepted"], answer
        action: str = answer["action"]
        if action == "play":
            self.board[answer["position"]] = None
            for item in answer["uncovered"]:
                self.board[item["position"]] = item["card"]
            self.depth += 1
        elif action == "draw":
            self.depth += 1
        else:
            if answer["undone"] == "play":
                self.board[answer["position"]] = answer["card"]
                for position in answer["hidden"]:
                    self.board[position] = HIDDEN
            self.depth -= 1
        self.top, self.stock = answer["waste_top"], answer["stock_left"]
        self.cleared = answer["cleared"]
        return action


def _connect(
    hub: Hub, who: Identity, code: str, index: int, now: int, updates: bool = False
) -> tuple[Connection, _Sink]:
    sink = _Sink()
    conn = Connection(cast(Any, _OpenSocket()), Encoding.MSGPACK, "127.0.0.1",
                      index, hub.batch, sink)
    hub.hellos.connect(conn).retune(100_000.0, 100_000.0)
    hello = m.Hello(who.name, m.PROTOCOL_VERSION, spectator_update=updates)
    if updates:
        hub._ticking.add(conn)  # as a hello asking for it does (server.hub_hello)
    hub.lobby.hello(conn, hello, NewPlayer(who.player_id, f"token-{who.player_id}"), now)
    session = hub.lobby.session_of(conn)
    assert session is not None
    session.room = code
    return conn, sink


@functools.cache
def _dealt(seed: str) -> DealtGame:
    """Room ``seed``'s deal, solved once per process: every round sets up fresh rooms of
    the same deals, and solving them again took most of a round's set-up."""
    return deal_for_seed(seed, Rules())


def _setup(
    hub: Hub, rooms: int, spectators: int = 0, updates: bool = False
) -> list[tuple[Connection, _Sink]]:
    """``rooms`` racing rooms of 4 on the hub (and ``spectators`` each, asking for
    ``spectator_update`` when ``updates``); every seat's connection and socket (the
    spectators' are not returned)."""
    seats: list[tuple[Connection, _Sink]] = []
    now = hub.now_ms()
    options = room_options()
    for r in range(rooms):
        players = [Identity(f"p{r}-{i}", f"player {i}") for i in range(4)]
        room = Room(f"R{r:04d}", options, players[0], now, hub.timings)
        for who in players[1:]:
            room.join(who, m.Role.PLAYER, now)
            room.set_ready(who.player_id, True)
        room.start(players[0].player_id, now, Fresh(seed=str(r), race_id=f"race-{r}"))
        room.deal_ready(1, _dealt(str(r)), now)
        assert room.phase is m.Phase.RACING
        hub.lobby.rooms[room.code] = room
        hub.handles[room.code] = RoomHandle(room, SpectatorFeed(0, live=LIVE_KINDS))
        for who in players:
            seats.append(_connect(hub, who, room.code, len(seats) + 1, now))
        for s in range(spectators):
            watcher = Identity(f"s{r}-{s}", f"watcher {s}")
            room.join(watcher, m.Role.SPECTATOR, now)
            _connect(hub, watcher, room.code, 100_000 + r * 10 + s, now, updates)
    return seats


def _record(hub: Hub, seats: list[tuple[Connection, _Sink]], moves: int) -> tuple[
    list[tuple[int, bytes]], dict[str, int]
]:
    """Play ``moves`` moves round robin; the frames in order (seat index, frame) and the mix."""
    rng = random.Random(6)
    players = []
    for conn, sink in seats:
        session = hub.lobby.session_of(conn)
        assert session is not None and session.room is not None
        room = hub.rooms[session.room]
        assert room.race is not None
        view = room.race.racers[session.identity.player_id].view()
        players.append(_Seat(conn, sink, list(view.board), view.waste_top, view.stock_left, rng))
    stream: list[tuple[int, bytes]] = []
    mix: dict[str, int] = {}
    while len(stream) < moves:
        for index, player in enumerate(players):
            frame = player.next_frame()
            assert hub.fast_move(player.conn, frame, hub.now_ms())
            action = player.read_answer()
            mix[action] = mix.get(action, 0) + 1
            stream.append((index, frame))
    return stream, mix


def _replay(hub: Hub, conns: list[Connection], stream: list[tuple[int, bytes]]) -> float:
    """CPU seconds to answer ``stream`` the way ``app._on_frame`` would."""
    now_ms, fast_move = hub.now_ms, hub.fast_move
    buckets = [hub.connections[conn] for conn in conns]
    started = time.process_time()
    for index, frame in stream:
        conn = conns[index]
        now = conn.last_seen_ms = now_ms()
        if not buckets[index].spend(now) or type(frame) is not bytes:
            raise AssertionError("the bench must never be rate limited")
        if not fast_move(conn, frame, now):
            raise AssertionError("every recorded move takes the fast path")
    return time.process_time() - started


def _replay_fanout(
    hub: Hub, conns: list[Connection], stream: list[tuple[int, bytes]],
    profile: cProfile.Profile | None = None,
) -> tuple[float, int, int]:
    """:func:`_replay`, firing every room's due progress flush after each two moves per
    player; the CPU seconds of the flushes alone, their count and the frames they sent
    (with ``profile``, the flushes alone are profiled)."""
    per_round = 2 * len(conns)
    flush_s, flushes, frames = 0.0, 0, 0
    hot = hub.metrics.hot
    for start in range(0, len(stream), per_round):
        _replay(hub, conns, stream[start : start + per_round])
        sent = hot.frames_sent
        started = time.process_time()
        if profile is not None:
            profile.enable()
        for slot_ms, filed in hub.flushes.take():  # every flush filed, without waiting
            hub._flush_slot(slot_ms, filed)
            flushes += len(filed)
        if profile is not None:
            profile.disable()
        flush_s += time.process_time() - started
        frames += hot.frames_sent - sent
    return flush_s, flushes, frames


def _fanout(args: argparse.Namespace, stream: list[tuple[int, bytes]], store: RaceStore) -> None:
    """Each round twice, alternately: the spectator on the separate frames, then on
    ``spectator_update``."""
    best = {False: float("inf"), True: float("inf")}
    for round_ in range(args.repeat):
        for updates in (False, True):
            hub = _hub(store)
            conns = [conn for conn, _sink in _setup(hub, args.rooms, 1, updates)]
            writes = _Sink.writes
            profile = cProfile.Profile() if args.profile and round_ == args.repeat - 1 else None
            seconds, flushes, frames = _replay_fanout(hub, conns, stream, profile)
            if profile is not None:
                pstats.Stats(profile).sort_stats("tottime").print_stats(25)
            writes = _Sink.writes - writes - len(stream)
            best[updates] = min(best[updates], seconds / max(1, flushes))
            kind = "spectator_update" if updates else "separate frames"
            print(f"round {round_ + 1}, {kind}: {seconds * 1e6 / max(1, flushes):.2f} us/flush,"
                  f" {frames / max(1, flushes):.2f} frames/flush,"
                  f" {writes / max(1, flushes):.2f} writes/flush ({flushes} flushes)")
    print(f"best: {best[False] * 1e6:.2f} us/flush CPU with separate frames,"
          f" {best[True] * 1e6:.2f} with spectator_update")


async def _replay_logged(
    hub: Hub, conns: list[Connection], stream: list[tuple[int, bytes]], turn: int
) -> float:
    """:func:`_replay` with the input log: yields every ``turn`` moves, ends committed."""
    assert hub.journal is not None
    now_ms, fast_move = hub.now_ms, hub.fast_move
    buckets = [hub.connections[conn] for conn in conns]
    started = time.process_time()
    for n, (index, frame) in enumerate(stream, 1):
        conn = conns[index]
        now = conn.last_seen_ms = now_ms()
        if not buckets[index].spend(now) or not fast_move(conn, frame, now):
            raise AssertionError("every recorded move takes the fast path, never limited")
        if n % turn == 0:
            await asyncio.sleep(0)
    await hub.journal.flush()
    return time.process_time() - started


def _hub(store: RaceStore, journal: Journal | None = None) -> Hub:
    # The hub keeps a result writer (and its fallback file) on a store; no race ends here.
    return Hub(Settings(), store, cast(Any, None), journal)


async def _main(args: argparse.Namespace) -> None:
    store = await RaceStore.connect("sqlite:///:memory:")
    with tempfile.TemporaryDirectory() as directory:
        logged = await RaceStore.connect(f"sqlite:///{Path(directory) / 'log.db'}")
        try:
            await _rounds(args, store, logged)
        finally:
            await store.close()
            await logged.close()


async def _rounds(args: argparse.Namespace, store: RaceStore, logged: RaceStore) -> None:
    hub = _hub(store)
    stream, mix = _record(hub, _setup(hub, args.rooms), args.moves)
    total = sum(mix.values())
    shares = ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in sorted(mix.items()))
    print(f"{len(stream)} moves over {args.rooms} rooms of 4: {shares}")
    if args.fanout:
        _fanout(args, stream, store)
        return
    best = best_log = float("inf")
    for round_ in range(args.repeat):
        hub = _hub(store)
        conns = [conn for conn, _sink in _setup(hub, args.rooms)]
        if args.profile and round_ == args.repeat - 1:
            profile = cProfile.Profile()
            profile.enable()
            seconds = _replay(hub, conns, stream)
            profile.disable()
            pstats.Stats(profile).sort_stats("tottime").print_stats(25)
        else:
            seconds = _replay(hub, conns, stream)
        best = min(best, seconds)
        log = SqlInputLog(logged)
        journal = Journal(log, round_ + 1)
        hub = _hub(logged, journal)
        journal.start()
        conns = [conn for conn, _sink in _setup(hub, args.rooms)]
        for code in hub.handles:
            journal.open(code)
        with_log = await _replay_logged(hub, conns, stream, args.turn)
        best_log = min(best_log, with_log)
        await journal.close()
        await log.close()
        await log.drop(list(hub.handles))
        print(
            f"round {round_ + 1}: {seconds * 1e6 / len(stream):.2f} us/move, "
            f"{with_log * 1e6 / len(stream):.2f} with the input log "
            f"({journal.entries_written} entries in {journal.commits} commits)"
        )
    print(f"best: {best * 1e6 / len(stream):.2f} us/move CPU, "
          f"{best_log * 1e6 / len(stream):.2f} with the input log")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rooms", type=int, default=50)
    parser.add_argument("--moves", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--profile", action="store_true",
                        help="cProfile the last round (with --fanout: its flushes)")
    parser.add_argument("--fanout", action="store_true",
                        help="time the progress flushes (one spectator per room) instead")
    parser.add_argument("--turn", type=int, default=200, help="moves between yields (log)")
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
