"""Abuse and bad input: rate limits, size caps, bad frames, timeouts, room limits, proxies,
floods paced or not, credit across reconnections and guessed room codes."""

from __future__ import annotations

import asyncio
import contextlib
import random
from pathlib import Path

import aiohttp
import msgpack
import pytest
import websockets
from hypothesis import given
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed

from protocol.deals.dealer import deal_for_seed
from protocol.rules.game import Rules
from protocol.wire import codec
from protocol.wire import messages as m
from protocol.wire.errors import CloseCode, ErrorCode
from server.config import Settings
from server.race.ratelimit import CreditBucket
from server.transport.clientaddr import client_address
from tests.serverutil import (
    TestClient,
    connect,
    move_request,
    open_room,
    running_server,
    upgrade_statuses,
)


async def close_code(client: TestClient, timeout: float = 15.0) -> int | None:
    """Read until the server closes; return its close code."""
    try:
        while True:
            await client.recv(timeout)
    except ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else None


async def test_going_over_the_credit_budget_gets_an_error_and_the_connection_survives(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path, player_burst=5, player_rate=5) as server:
        ann = await connect(server.ws_url, "ann")  # hello spent one credit
        for n in range(8):
            await ann.send(m.Ping(n))
        replies = [await ann.recv() for _ in range(8)]
        limited = [r for r in replies if isinstance(r, m.Error)]
        assert limited and all(e.code == ErrorCode.RATE_LIMITED for e in limited)
        assert sum(isinstance(r, m.Pong) for r in replies) == 4
        await asyncio.sleep(0.5)
        assert isinstance(await ann.request(m.Ping(99), m.Pong), m.Pong)


async def test_repeated_abuse_closes_the_connection_with_1008(tmp_path: Path) -> None:
    async with running_server(tmp_path, player_burst=3, player_rate=1, abuse_strikes=5) as server:
        ann = await connect(server.ws_url, "ann")
        for n in range(20):
            await ann.send(m.Ping(n))
        assert await close_code(ann) == CloseCode.POLICY_VIOLATION
        closing = [f for f in ann.frames if isinstance(f, m.Closing)]
        assert closing and closing[0].code == CloseCode.POLICY_VIOLATION


async def test_spectators_have_a_smaller_budget_than_players(tmp_path: Path) -> None:
    settings = {"player_burst": 20.0, "spectator_burst": 4.0, "spectator_rate": 0.5}
    async with running_server(tmp_path, **settings) as server:
        (ann,), state = await open_room(server.ws_url, ["ann"])
        eve = await connect(server.ws_url, "eve")
        await eve.request(m.Join(state.code, m.Role.SPECTATOR), m.RoomState)
        for client in (ann, eve):
            client.drop_unread()
            for n in range(6):
                await client.send(m.Ping(n))

        async def errors(client: TestClient) -> int:
            count = 0
            for _ in range(6):
                reply = await client.expect(m.Pong | m.Error)  # type: ignore[arg-type]
                count += isinstance(reply, m.Error)
            return count

        assert await errors(ann) == 0
        assert await errors(eve) >= 2


async def test_a_frame_over_the_protocol_limit_gets_an_error_and_the_connection_stays(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        ann = await connect(server.ws_url, "ann")
        await ann.send_raw(msgpack.packb({"t": "ping", "client_time_ms": 1, "x": "y" * 5000}))
        error = await ann.expect(m.Error)
        assert error.code == ErrorCode.FRAME_TOO_LARGE
        assert isinstance(await ann.request(m.Ping(1), m.Pong), m.Pong)


async def test_a_frame_over_the_hard_cap_closes_the_connection_with_1009(tmp_path: Path) -> None:
    async with running_server(tmp_path, max_frame_bytes=8192) as server:
        ann = await connect(server.ws_url, "ann")
        await ann.send_raw(b"\x00" * 20000)
        assert await close_code(ann) == CloseCode.MESSAGE_TOO_BIG


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (b"\xc1", ErrorCode.MALFORMED_FRAME),
        ("{}", ErrorCode.WRONG_FRAME_TYPE),
        (msgpack.packb([1, 2]), ErrorCode.NOT_A_MAP),
        (msgpack.packb({"t": "teleport"}), ErrorCode.UNKNOWN_TYPE),
        (msgpack.packb({"t": "ping"}), ErrorCode.MISSING_FIELD),
        (msgpack.packb({"t": "ping", "client_time_ms": -1}), ErrorCode.INT_OUT_OF_RANGE),
        (msgpack.packb({"t": "ping", "client_time_ms": 1, "x": 1}), ErrorCode.EXTRA_FIELD),
        (msgpack.packb(msgpack.ExtType(1, b"x")), ErrorCode.EXTENSION_TYPE),
    ],
    ids=lambda value: value.name if isinstance(value, ErrorCode) else None,
)
async def test_a_bad_frame_gets_an_error_with_its_code_and_the_connection_survives(
    tmp_path: Path, frame: bytes | str, code: ErrorCode
) -> None:
    async with running_server(tmp_path) as server:
        ann = await connect(server.ws_url, "ann")
        await ann.send_raw(frame)
        error = await ann.expect(m.Error)
        assert error.code == code
        assert isinstance(await ann.request(m.Ping(1), m.Pong), m.Pong)


async def test_a_binary_frame_on_the_json_subprotocol_is_the_wrong_frame_type(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        ann = await connect(server.ws_url, "ann", encoding="json")
        await ann.send_raw(b'{"t": "ping", "client_time_ms": 1}')
        assert (await ann.expect(m.Error)).code == ErrorCode.WRONG_FRAME_TYPE
        assert isinstance(await ann.request(m.Ping(1), m.Pong), m.Pong)


async def test_the_tenth_bad_frame_closes_the_connection_with_4004(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        ann = await connect(server.ws_url, "ann")
        for _ in range(10):
            await ann.send_raw(b"\xc1")
        assert await close_code(ann) == CloseCode.TOO_MANY_ERRORS
        errors = [f for f in ann.frames if isinstance(f, m.Error)]
        assert len(errors) == 10


async def test_an_unsupported_protocol_version_is_refused_and_closed_with_4000(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        ann = await connect(server.ws_url, "ann", hello=False)
        await ann.send(m.Hello(name="ann", version=99))
        error = await ann.expect(m.Error)
        assert error.code == ErrorCode.UNSUPPORTED_VERSION
        assert await close_code(ann) == CloseCode.UNSUPPORTED_VERSION


async def test_messages_before_hello_are_refused(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        ann = await connect(server.ws_url, "ann", hello=False)
        error = await ann.request(m.CreateRoom(), m.Error)
        assert error.code == ErrorCode.HELLO_REQUIRED
        welcome = await ann.request(m.Hello(name="ann", version=m.PROTOCOL_VERSION), m.Welcome)
        error = await ann.request(m.Hello(name="ann", version=m.PROTOCOL_VERSION), m.Error)
        assert welcome.player_id and error.code == ErrorCode.ALREADY_HELLO


async def test_a_connection_may_create_only_a_limited_number_of_rooms(tmp_path: Path) -> None:
    async with running_server(tmp_path, rooms_per_connection=2) as server:
        ann = await connect(server.ws_url, "ann")
        for _ in range(2):
            await ann.request(m.CreateRoom(), m.RoomState)
            await ann.request(m.Leave(), m.Left)
        error = await ann.request(m.CreateRoom(), m.Error)
        assert error.code == ErrorCode.TOO_MANY_ROOMS


async def test_a_connection_that_never_says_hello_is_closed_with_4001(tmp_path: Path) -> None:
    async with running_server(tmp_path, hello_timeout_s=0.2) as server:
        ann = await connect(server.ws_url, "ann", hello=False)
        assert await close_code(ann) == CloseCode.HELLO_TIMEOUT


async def test_a_silent_connection_is_closed_with_4002(tmp_path: Path) -> None:
    async with running_server(tmp_path, idle_timeout_s=0.3) as server:
        ann = await connect(server.ws_url, "ann")
        assert await close_code(ann) == CloseCode.IDLE_TIMEOUT


async def test_a_dead_socket_that_stops_answering_pings_is_dropped(tmp_path: Path) -> None:
    async with (
        running_server(tmp_path, heartbeat_s=0.2) as server,
        aiohttp.ClientSession() as http,
    ):
        ws = await http.ws_connect(
            server.ws_url, protocols=[codec.SUBPROTOCOL_JSON], autoping=False
        )
        await ws.send_str(codec.encode_json(m.Hello(name="zed", version=m.PROTOCOL_VERSION)))
        for _ in range(50):
            if not server.hub.connections:
                break
            await asyncio.sleep(0.05)
        assert not server.hub.connections
        await ws.close()


async def test_a_quiet_client_that_answers_pings_stays_connected(tmp_path: Path) -> None:
    async with running_server(tmp_path, heartbeat_s=0.2) as server:
        ann = await connect(server.ws_url, "ann")
        await asyncio.sleep(1.0)  # five heartbeats of silence; the client answers the pings
        pong = await ann.request(m.Ping(5), m.Pong)
        assert pong.client_time_ms == 5 and len(server.hub.connections) == 1
        await ann.close()


async def test_the_server_answers_a_clients_ping_with_a_pong(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        ann = await connect(server.ws_url, "ann")
        answered = await ann.ws.ping(b"are you there")
        await asyncio.wait_for(answered, 5)
        await ann.close()


async def test_no_subprotocol_offer_means_msgpack_of_version_1(tmp_path: Path) -> None:
    async with running_server(tmp_path) as server:
        ws = await websockets.connect(server.ws_url)
        await ws.send(codec.encode_msgpack(m.Hello(name="ann", version=1)))
        welcome = codec.decode_server(await asyncio.wait_for(ws.recv(), 5), "msgpack")
        assert isinstance(welcome, m.Welcome) and welcome.protocol_version == 1
        await ws.close()


async def test_garbage_from_one_client_never_disturbs_a_race_in_another_room(
    tmp_path: Path,
) -> None:
    rng = random.Random(7)
    valid = [
        codec.encode_msgpack(message)
        for message in (
            m.Hello(name="x", version=m.PROTOCOL_VERSION),
            m.CreateRoom(),
            m.Join("ZZZZZZ"),
            m.MoveRequest(1, m.MoveAction.PLAY, 3),
            m.Kick("nobody"),
            m.Start(),
            m.Rematch(),
        )
    ]
    async with running_server(tmp_path, bad_frame_limit=10_000, player_burst=10_000) as server:
        clients, _ = await open_room(server.ws_url, ["ann", "bob"], practice_seed="42")
        ann, bob = clients
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        vandal = await connect(server.ws_url, "vandal", hello=False)
        for _ in range(300):
            frame = bytearray(rng.choice(valid))
            for _ in range(rng.randrange(4)):
                frame[rng.randrange(len(frame))] = rng.randrange(256)
            if rng.random() < 0.2:
                frame = bytearray(rng.randbytes(rng.randrange(1, 64)))
            await vandal.send_raw(bytes(frame))
        # The vandal still gets answers, and the race next door runs to the end.
        assert isinstance(await vandal.request(m.Ping(5), m.Pong), m.Pong)
        line = deal_for_seed("42", Rules()).solution
        for seq, step in enumerate(line, 1):
            assert (await bob.request(move_request(seq, step), m.MoveResult)).accepted
        await ann.send(m.Resign())
        over = await bob.expect(m.RaceOver)
        assert over.standings[0].player_id == bob.player_id
        async with aiohttp.ClientSession() as http, http.get(server.url + "/healthz") as resp:
            assert resp.status == 200


async def test_connection_limits_key_on_the_peer_unless_it_is_a_trusted_proxy(
    tmp_path: Path,
) -> None:
    async def attempts(url: str, forwarded: list[str]) -> list[int]:
        return await upgrade_statuses(
            lambda headers: websockets.connect(url, additional_headers=headers), forwarded
        )

    limits = {"connect_burst": 2.0, "connect_rate": 0.01}
    async with running_server(tmp_path / "a", **limits) as server:
        # Not a trusted proxy: the forged header is ignored, all come from 127.0.0.1.
        assert await attempts(server.ws_url, ["10.0.0.1", "10.0.0.2", "10.0.0.3"]) == [
            101,
            101,
            429,
        ]
    async with running_server(tmp_path / "b", trusted_proxies="127.0.0.1/32", **limits) as server:
        statuses = await attempts(server.ws_url, ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.1"])
        assert statuses == [101, 101, 101, 101]
        statuses = await attempts(server.ws_url, ["10.0.0.1"])
        assert statuses == [429]


def test_client_address_believes_forwarded_for_only_from_trusted_proxies() -> None:
    trusted = Settings(trusted_proxies="10.0.0.0/8, ::1").proxy_networks()
    assert client_address("203.0.113.9", "1.2.3.4", trusted) == "203.0.113.9"
    assert client_address("10.1.1.1", "1.2.3.4", trusted) == "1.2.3.4"
    assert client_address("10.1.1.1", "6.6.6.6, 1.2.3.4, 10.2.2.2", trusted) == "1.2.3.4"
    assert client_address("10.1.1.1", None, trusted) == "10.1.1.1"
    assert client_address("::1", "2001:db8::1", trusted) == "2001:db8::1"
    assert client_address(None, "1.2.3.4", trusted) == "unknown"


async def test_a_resign_is_handled_even_without_credit(tmp_path: Path) -> None:
    async with running_server(tmp_path, player_burst=4, player_rate=0.5) as server:
        (ann,), _ = await open_room(server.ws_url, ["ann"], practice_seed="42")
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        for n in range(4):
            await ann.send(m.Ping(n))
        await ann.send(m.MoveRequest(1, m.MoveAction.DRAW))
        limited = await ann.expect(m.Error)
        while limited.ref != "move":
            limited = await ann.expect(m.Error)
        assert limited.code == ErrorCode.RATE_LIMITED and limited.seq == 1
        await ann.send(m.Resign())
        over = await ann.expect(m.RaceOver)
        assert over.standings[0].status is m.PlayerStatus.RESIGNED


# ---- hostile clients: paced floods, credit that follows the player, guessed codes -------
async def _paced(client: TestClient, per_s: float, seconds: float) -> tuple[int | None, int, float]:
    """Send ``ping`` messages at ``per_s`` a second for up to ``seconds`` while reading:
    the close code, the pongs answered and the seconds until the close."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    pongs = 0

    async def read() -> int | None:
        nonlocal pongs
        try:
            while True:
                pongs += isinstance(await client.recv(seconds + 5), m.Pong)
        except ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd else None

    reader = asyncio.ensure_future(read())
    sent = 0
    with contextlib.suppress(ConnectionClosed):
        while not reader.done() and loop.time() - started < seconds:
            due = int((loop.time() - started) * per_s) + 1
            while sent < due:
                sent += 1
                await client.send(m.Ping(sent))
            await asyncio.sleep(0.002)
    elapsed = loop.time() - started
    # The sends may see the close first: give the reader a moment to read it.
    await asyncio.wait([reader], timeout=2)
    if not reader.done():
        reader.cancel()
        return None, pongs, elapsed
    return await reader, pongs, elapsed


async def test_a_paced_flood_at_ten_times_the_credit_rate_is_closed_with_1008(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:  # the default budgets: 30/s, burst 60
        flooder = await connect(server.ws_url, "flooder")
        code, pongs, elapsed = await _paced(flooder, per_s=300, seconds=6)
        assert code == CloseCode.POLICY_VIOLATION, f"not closed after {elapsed:.1f} s"
        assert elapsed < 3 and pongs <= 60 + 30 * elapsed + 5


async def test_a_client_a_little_over_its_rate_is_refused_some_frames_but_never_closed(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path, player_rate=20, player_burst=5) as server:
        eager = await connect(server.ws_url, "eager")
        code, pongs, elapsed = await _paced(eager, per_s=26, seconds=3)
        assert code is None and elapsed >= 3
        assert pongs < 26 * elapsed  # some were refused
        await eager.close()


async def test_connections_from_one_address_share_its_credit(tmp_path: Path) -> None:
    settings = {"player_rate": 0.01, "player_burst": 6, "address_players": 2}
    async with running_server(tmp_path, **settings) as server:
        clients = [await connect(server.ws_url, f"p{n}") for n in range(3)]
        # Each hello spent one of the address's 12 credits: 9 are left for 15 pings.
        for client in clients:
            for n in range(5):
                await client.send(m.Ping(n))
        pongs = 0
        for client in clients:
            for _ in range(5):
                pongs += isinstance(await client.expect(m.Pong | m.Error), m.Pong)  # type: ignore[arg-type]
        assert pongs == 9


async def test_a_player_closed_for_flooding_gets_no_fresh_credit_by_resuming(
    tmp_path: Path,
) -> None:
    settings = {"player_rate": 2, "player_burst": 10, "abuse_strikes": 5}
    async with running_server(tmp_path, **settings) as server:
        (ann,), _ = await open_room(server.ws_url, ["ann"], practice_seed="42")
        await ann.send(m.Start())
        await ann.expect(m.RaceStart)
        assert ann.welcome is not None
        token, started = ann.welcome.token, asyncio.get_running_loop().time()
        pongs = 0
        for _cycle in range(4):
            for n in range(40):
                await ann.send(m.Ping(n))
            assert await close_code(ann) == CloseCode.POLICY_VIOLATION
            pongs += sum(isinstance(f, m.Pong) for f in ann.frames)
            ann = await connect(server.ws_url, "ann", token=token)
            assert ann.welcome is not None and ann.welcome.resumed
        elapsed = asyncio.get_running_loop().time() - started
        # One bucket of 10 for the player, and 2 a second since: not 10 per connection.
        assert pongs <= 10 + 2 * elapsed + 4, (pongs, elapsed)


async def test_failed_joins_have_a_small_budget_per_address_across_connections(
    tmp_path: Path,
) -> None:
    settings = {"join_failure_burst": 3, "join_failure_rate": 0.01}
    async with running_server(tmp_path, **settings) as server:
        host = await connect(server.ws_url, "host")
        state = await host.request(m.CreateRoom(), m.RoomState)
        guesser = await connect(server.ws_url, "guesser")
        for guess in ("CCCCC3", "CCCCC4", "CCCCC6"):
            error = await guesser.request(m.Join(guess), m.Error)
            assert error.code == ErrorCode.ROOM_NOT_FOUND
        await guesser.send(m.Join("CCCCC7"))
        assert await close_code(guesser) == CloseCode.POLICY_VIOLATION
        assert any(isinstance(f, m.Error) and f.code == ErrorCode.ROOM_NOT_FOUND
                   for f in guesser.frames[-3:])
        # A new connection from the same address starts with the address's empty budget...
        second = await connect(server.ws_url, "second")
        await second.send(m.Join("CCCCC9"))
        assert await close_code(second) == CloseCode.POLICY_VIOLATION
        # ... while a join that finds its room costs nothing of it.
        friend = await connect(server.ws_url, "friend")
        joined = await friend.request(m.Join(state.code), m.RoomState)
        assert joined.code == state.code


@given(st.lists(st.integers(0, 40), min_size=1, max_size=200))
def test_a_sender_within_its_rate_is_never_abusive(gaps: list[int]) -> None:
    # 50 credits a second and a frame at most every 20 ms: never short of credit.
    bucket = CreditBucket.full(rate=50, burst=5, now_ms=0)
    now = 0
    for gap in gaps:
        now += max(gap, 20)
        allowed = bucket.spend(now)
        bucket.note(now, not allowed)
        assert allowed and not bucket.is_abusive(1, 0.01)


@given(st.integers(3, 30), st.integers(1000, 4000))
def test_a_flood_at_several_times_the_rate_is_abusive_within_a_few_windows(
    factor: int, window_ms: int
) -> None:
    rate, burst = 10.0, 20.0
    bucket = CreditBucket.full(rate, burst, now_ms=0, window_ms=window_ms)
    step_ms = 1000 / (rate * factor)
    abusive_at = None
    for n in range(1, 100_000):
        now = int(n * step_ms)
        bucket.note(now, not bucket.spend(now))
        if bucket.is_abusive(20, 0.5):
            abusive_at = now
            break
    # The burst goes first; then, two windows later at most, both windows are all flood.
    assert abusive_at is not None
    assert abusive_at <= 2 * burst * step_ms + 3 * window_ms
