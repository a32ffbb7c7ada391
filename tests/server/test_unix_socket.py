"""The server's Unix socket (``--unix-socket``): served like the TCP port, its peers
trusted like a proxy, its file made, replaced and removed with care.

The lifecycle runs the real ``tripeaks-server`` as a subprocess; the limits run an
in-process server with the socket added to its runner.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
import websockets
from websockets.typing import Subprotocol

from protocol.wire import codec
from protocol.wire import messages as m
from server.config import MAX_UNIX_PATH, SettingsError, from_env
from server.transport import unixsocket
from server.transport.clientaddr import LOCAL, client_address
from tests.server.test_log_lines import ended, json_objects, launched, started
from tests.serverutil import TestClient, running_server, upgrade_statuses


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A directory with a short path: a socket's path must fit in 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="tpux-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


async def _hello_over(path: Path) -> m.Welcome:
    """Say hello over the Unix socket at ``path``; the welcome."""
    ws = await websockets.unix_connect(
        str(path), "ws://localhost/ws", subprotocols=[Subprotocol(codec.SUBPROTOCOL_JSON)]
    )
    try:
        enc = codec.dialect("json")
        client = TestClient(ws, enc)
        return await client.request(m.Hello(name="unixy", version=enc.version), m.Welcome)
    finally:
        await ws.close()


async def test_the_server_serves_http_and_websockets_on_its_socket_and_removes_it_at_the_end(
    tmp_path: Path, short_dir: Path
) -> None:
    path = short_dir / "node.sock"
    async with launched(tmp_path, "--unix-socket", str(path)) as server:
        await started(server)
        info = json.loads(server.lines[-1])
        assert info["unix_socket"] == str(path)
        assert stat.S_ISSOCK(path.lstat().st_mode)
        assert stat.S_IMODE(path.lstat().st_mode) == unixsocket.MODE
        connector = aiohttp.UnixConnector(path=str(path))
        async with (
            aiohttp.ClientSession(connector=connector) as http,
            http.get("http://localhost/healthz") as resp,
        ):
            assert resp.status == 200
        welcome = await _hello_over(path)
        assert welcome.player_id
        # The TCP port still serves as before.
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://127.0.0.1:{server.port}/healthz") as resp,
        ):
            assert resp.status == 200
        lines = await ended(server)
    assert not path.exists(), "a clean stop leaves no socket file behind"
    assert json_objects(lines)[-1]["event"] == "server_stopped"


async def test_a_socket_file_left_by_a_dead_server_is_replaced(
    tmp_path: Path, short_dir: Path
) -> None:
    path = short_dir / "node.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # bound, never listening, then closed: what a killed server leaves
    dead.close()
    assert stat.S_ISSOCK(path.lstat().st_mode)
    async with launched(tmp_path, "--unix-socket", str(path)) as server:
        await started(server)
        assert (await _hello_over(path)).player_id
        await ended(server)


async def _refused_start(tmp_path: Path, path: Path) -> str:
    """Start a server on ``path`` that must refuse to start: its ``server_failed`` reason."""
    async with launched(tmp_path, "--unix-socket", str(path)) as server:
        assert server.proc.stderr is not None
        out = await asyncio.wait_for(server.proc.stderr.read(), 60)
        status = await asyncio.wait_for(server.proc.wait(), 30)
    assert status == 1, out
    failed = [doc for doc in json_objects(out.splitlines()) if doc["event"] == "server_failed"]
    assert len(failed) == 1, out
    reason = failed[0]["reason"]
    assert isinstance(reason, str)
    return reason


async def test_a_socket_where_a_server_still_listens_stops_the_start(
    tmp_path: Path, short_dir: Path
) -> None:
    path = short_dir / "node.sock"
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(str(path))
    live.listen()
    try:
        reason = await _refused_start(tmp_path, path)
        assert f"a server already listens on {path}" in reason
        # Still the other server's socket: it takes connections as before.
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.connect(str(path))
        probe.close()
    finally:
        live.close()


async def test_a_path_that_is_not_a_socket_is_left_alone_and_stops_the_start(
    tmp_path: Path, short_dir: Path
) -> None:
    path = short_dir / "node.sock"
    path.write_text("not a socket\n")
    reason = await _refused_start(tmp_path, path)
    assert f"{path} exists and is not a socket" in reason
    assert path.read_text() == "not a socket\n"


async def test_a_missing_directory_stops_the_start(tmp_path: Path, short_dir: Path) -> None:
    path = short_dir / "absent" / "node.sock"
    reason = await _refused_start(tmp_path, path)
    assert f"{path.parent} is not a directory" in reason


def test_a_path_too_long_for_a_socket_is_a_settings_error() -> None:
    longest = "/tmp/" + "x" * (MAX_UNIX_PATH - len("/tmp/"))
    assert from_env({}, unix_socket=longest).unix_socket == longest
    with pytest.raises(SettingsError, match="unix_socket must be at most 107 bytes"):
        from_env({}, unix_socket=longest + "x")
    with pytest.raises(SettingsError, match="unix_socket"):
        from_env({"TRIPEAKS_UNIX_SOCKET": longest + "x"})


def test_a_peer_on_the_socket_is_a_trusted_proxy() -> None:
    trusted = from_env({}, trusted_proxies="10.0.0.0/8").proxy_networks()
    # No address (the socket's peers have none): the forwarded client is believed.
    assert client_address("", "203.0.113.9", trusted) == "203.0.113.9"
    assert client_address("", "6.6.6.6, 203.0.113.9, 10.2.2.2", trusted) == "203.0.113.9"
    assert client_address("", None, trusted) == LOCAL
    assert client_address("", "", trusted) == LOCAL
    # Over TCP nothing changed.
    assert client_address("203.0.113.7", "1.2.3.4", trusted) == "203.0.113.7"
    assert client_address(None, "1.2.3.4", trusted) == "unknown"


async def test_connection_limits_over_the_socket_key_on_the_forwarded_address(
    tmp_path: Path, short_dir: Path
) -> None:
    path = short_dir / "node.sock"

    async def attempts(forwarded: list[str | None]) -> list[int]:
        return await upgrade_statuses(
            lambda headers: websockets.unix_connect(
                str(path), "ws://localhost/ws", additional_headers=headers
            ),
            forwarded,
        )

    limits = {"connect_burst": 2.0, "connect_rate": 0.01}
    async with running_server(tmp_path, unix_socket=str(path), **limits):
        # Each forwarded client has its own two connections' burst...
        assert await attempts(["10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.2"]) == [101] * 4
        assert await attempts(["10.0.0.1"]) == [429]
        # ...and the socket's own requests, without the header, share one more.
        assert await attempts([None, None, None]) == [101, 101, 429]
    assert not path.exists()


def test_remove_spares_a_socket_another_server_made_since(short_dir: Path) -> None:
    path = short_dir / "node.sock"
    first = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    second = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.closing(first), contextlib.closing(second):
        first.bind(str(path))
        inode = path.stat().st_ino
        # Moved aside, not removed: its inode stays taken, so the next one differs.
        os.rename(path, short_dir / "old.sock")
        second.bind(str(path))
        unixsocket.remove(path, inode)
        assert path.exists(), "the newer server's socket was removed"
        unixsocket.remove(path, path.stat().st_ino)
        assert not path.exists()
