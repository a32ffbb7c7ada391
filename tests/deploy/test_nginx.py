"""deploy/nginx.conf for real: a real nginx in front of a real server, bots racing through it.

The config is changed only where a test must: plain HTTP on ephemeral
loopback ports instead of TLS, the upstream's socket path, and temp dirs for
the pid file, logs, cache and buffers.  Every substitution must match, so an
edit to nginx.conf that this test no longer understands fails here instead of
silently testing something else.

The server listens on a Unix socket as ``--unix-socket`` makes it (the same
``server.transport.unixsocket.listen``), and nginx reaches it there, as in the
deployment; one test runs ``tripeaks-server --unix-socket`` itself.  A socket
path must fit in 107 bytes, so sockets go in a short directory under /tmp.

Distinct clients are distinct loopback source addresses (127.0.0.2, .3, ...),
so nginx sees real, different peers and forwards them as they are.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
import websockets
from websockets.typing import Subprotocol

from client_cli.bot import BotSettings, run_bots
from protocol.wire import codec
from protocol.wire import messages as m
from tests.deploy.test_postgres import server_process
from tests.pgutil import in_ci
from tests.serverutil import running_server

DEPLOY_CONF = Path(__file__).resolve().parents[2] / "deploy" / "nginx.conf"


def nginx_binary() -> str:
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.path.exists(p)), None
    )
    if found is None:
        reason = "nginx is not installed (apt-get install nginx)"
        if in_ci():
            pytest.fail(f"nginx is required in CI: {reason}")
        pytest.skip(reason)
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def config_for_test(
    conf: str,
    root: Path,
    *,
    port: int,
    http_port: int,
    upstream: Path | int,
    tls: tuple[Path, Path] | None = None,
) -> str:
    """deploy/nginx.conf with the test's ports, upstream and paths.

    ``upstream`` is the server's Unix socket (a path), or a TCP port on
    127.0.0.1 for the tests of a TCP upstream (as nginx-cluster.conf has).
    Without ``tls`` the TLS listener becomes plain HTTP; with ``tls=(cert, key)``
    it stays TLS, with the placeholder certificate paths pointed at those files.
    """
    if isinstance(upstream, Path):
        server = f"server unix:{upstream};"
    else:
        server = f"server 127.0.0.1:{upstream};"
    if tls is None:
        listener = rf"\1listen 127.0.0.1:{port};"
        certificates = [(r"^\s*ssl_[a-z_]+ [^;]*;\n", "")]
    else:
        listener = rf"\1listen 127.0.0.1:{port} ssl;"
        certificates = [
            (r"ssl_certificate +/etc/tripeaks/tls/fullchain\.pem;", f"ssl_certificate {tls[0]};"),
            (
                r"ssl_certificate_key +/etc/tripeaks/tls/privkey\.pem;",
                f"ssl_certificate_key {tls[1]};",
            ),
        ]
    swaps = [
        (r"^pid /run/nginx\.pid;$", f"pid {root}/nginx.pid;"),
        (r"^error_log /var/log/nginx/error\.log warn;$", f"error_log {root}/error.log info;"),
        (r"^(\s*)access_log /var/log/nginx/access\.log;$", rf"\1access_log {root}/access.log;"),
        (r"^(\s*)server unix:/run/tripeaks/tripeaks\.sock;$", rf"\1{server}"),
        (r"proxy_cache_path /var/cache/nginx/tripeaks ", f"proxy_cache_path {root}/cache "),
        (r"^(\s*)listen 80;$", rf"\1listen 127.0.0.1:{http_port};"),
        (r"^(\s*)listen 443 ssl;$", listener),
        (r"^\s*listen \[::\]:(80|443 ssl);\n", ""),
        *certificates,
        (
            r"^http \{$",
            "http {\n"
            + "".join(
                f"    {kind}_temp_path {root}/{kind}_temp;\n"
                for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
            ),
        ),
    ]
    for pattern, replacement in swaps:
        conf, count = re.subn(pattern, replacement, conf, flags=re.M)
        assert count > 0, f"deploy/nginx.conf no longer has a line matching {pattern!r}"
    if tls is None:
        assert "ssl" not in re.sub(r"#.*", "", conf), conf
    return conf


@dataclass
class Nginx:
    port: int
    http_port: int
    root: Path
    process: subprocess.Popen[bytes]
    tls: bool = False

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"{'wss' if self.tls else 'ws'}://127.0.0.1:{self.port}/ws"

    def error_log(self) -> str:
        path = self.root / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""


@pytest.fixture
def nginx_root() -> Iterator[Path]:
    # Not pytest's tmp_path: nginx workers run as an unprivileged user when we
    # are root and must be able to reach their temp and cache directories.
    root = Path(tempfile.mkdtemp(prefix="tripeaks-nginx-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def socket_path() -> Iterator[Path]:
    """Where the server's Unix socket goes: a short path (pytest's tmp_path can be
    too long for a socket), in a directory nginx's workers may enter."""
    directory = Path(tempfile.mkdtemp(prefix="tp-nginx-", dir="/tmp"))
    directory.chmod(0o755)
    yield directory / "tripeaks.sock"
    shutil.rmtree(directory, ignore_errors=True)


@asynccontextmanager
async def nginx_in_front_of(
    upstream: Path | int, root: Path, tls: tuple[Path, Path] | None = None
) -> AsyncIterator[Nginx]:
    """Run nginx with the deploy config, proxying to ``upstream`` (a server's Unix
    socket, or its TCP port), until the block ends."""
    binary = nginx_binary()
    port, http_port = free_port(), free_port()
    conf = config_for_test(
        DEPLOY_CONF.read_text(),
        root,
        port=port,
        http_port=http_port,
        upstream=upstream,
        tls=tls,
    )
    (root / "nginx.conf").write_text(conf)
    base = [binary, "-p", str(root), "-e", str(root / "error.log"), "-c", str(root / "nginx.conf")]
    check = subprocess.run([*base, "-t"], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr
    process = subprocess.Popen([*base, "-g", "daemon off;"], stderr=subprocess.DEVNULL)
    nginx = Nginx(port, http_port, root, process, tls=tls is not None)
    try:
        await wait_until_serving(nginx)
        yield nginx
    finally:
        process.send_signal(signal.SIGQUIT)  # graceful: lets open sockets finish
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def wait_until_serving(nginx: Nginx) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(200):
            if nginx.process.poll() is not None:
                raise AssertionError(f"nginx exited: {nginx.error_log()}")
            try:
                # Readiness only: certificate checks belong to the TLS test itself.
                async with session.get(f"{nginx.url}/healthz", ssl=False) as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    raise AssertionError(f"nginx did not come up: {nginx.error_log()}")


def session_from(source: str) -> aiohttp.ClientSession:
    """An HTTP client whose connections come from loopback address ``source``."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(source, 0)))


async def open_ws(url: str, source: str, headers: dict[str, str] | None = None) -> int:
    """Open a WebSocket from ``source`` and return the HTTP status (101 when it opened)."""
    try:
        ws = await websockets.connect(
            url,
            subprotocols=[Subprotocol(codec.SUBPROTOCOL_JSON)],
            additional_headers=headers,
            compression=None,
            proxy=None,
            local_addr=(source, 0),
        )
    except websockets.InvalidStatus as exc:
        return int(exc.response.status_code)
    await ws.close()
    return 101


# Bots at full speed outrun the default move budget (30/s); a refused resign
# would leave the race waiting for its time limit.  Moves are not this test's subject.
UNTHROTTLED = {"player_rate": 1000.0, "player_burst": 1000.0}


async def test_bots_race_a_full_game_through_nginx(
    nginx_root: Path, socket_path: Path, tmp_path: Path
) -> None:
    async with (
        running_server(
            tmp_path, unix_socket=str(socket_path), trusted_proxies="127.0.0.1/32", **UNTHROTTLED
        ),
        nginx_in_front_of(socket_path, nginx_root) as nginx,
    ):
        results = await run_bots(
            nginx.ws_url,
            3,
            host=True,
            options=m.RoomOptions(countdown_s=0, name="via nginx"),
            settings=BotSettings(step_timeout_s=30),
        )
        assert results.ok, results.errors
        assert results.race_over is not None
        ranks = sorted(bot.rank for bot in results.bots if bot.rank is not None)
        assert ranks == [1, 2, 3]
        race_id = results.race_over.race_id
        async with aiohttp.ClientSession() as http:
            for _ in range(100):  # the race is written just after race_over goes out
                async with http.get(f"{nginx.url}/api/races/{race_id}") as response:
                    if response.status == 200:
                        stored = await response.json()
                        break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError(f"race {race_id} never reached the API")
        assert stored["race_id"] == race_id
        assert stored["room_name"] == "via nginx"
        assert sorted(p["rank"] for p in stored["players"]) == [1, 2, 3]
        assert all(p["log"] for p in stored["players"])
        assert "upstream timed out" not in nginx.error_log()


async def test_nginx_caches_static_files_and_redirects_plain_http(
    nginx_root: Path, socket_path: Path, tmp_path: Path
) -> None:
    async with (
        running_server(tmp_path, unix_socket=str(socket_path)),
        nginx_in_front_of(socket_path, nginx_root) as nginx,
        aiohttp.ClientSession() as http,
    ):
        statuses = []
        for _ in range(2):
            async with http.get(f"{nginx.url}/static/css/site.css") as response:
                assert response.status == 200
                assert response.headers.getall("Cache-Control") == ["max-age=600"]
                statuses.append(response.headers["X-Cache-Status"])
        assert statuses == ["MISS", "HIT"]
        redirect_url = f"http://127.0.0.1:{nginx.http_port}/api/rooms?x=1"
        async with http.get(redirect_url, allow_redirects=False) as response:
            assert response.status == 301
            assert response.headers["Location"] == "https://127.0.0.1/api/rooms?x=1"


async def test_metrics_are_served_through_nginx_only_to_loopback(
    nginx_root: Path, socket_path: Path, tmp_path: Path
) -> None:
    async with (
        running_server(tmp_path, unix_socket=str(socket_path)),
        nginx_in_front_of(socket_path, nginx_root) as nginx,
    ):
        async with session_from("127.0.0.1") as local, local.get(f"{nginx.url}/metrics") as r:
            assert r.status == 200
        async with session_from("127.0.0.2") as other, other.get(f"{nginx.url}/metrics") as r:
            assert r.status == 403


LIMITED = {"connect_burst": 2.0, "connect_rate": 0.001}


@pytest.mark.parametrize("over_tcp", [False, True], ids=["unix-socket", "tcp"])
async def test_behind_a_trusted_nginx_each_client_address_has_its_own_limit(
    nginx_root: Path, socket_path: Path, tmp_path: Path, over_tcp: bool
) -> None:
    # Over TCP nginx is a proxy because trusted_proxies names its address; over the
    # Unix socket it is one with no trusted network at all.
    trusted = "127.0.0.1/32" if over_tcp else ""
    async with (
        running_server(
            tmp_path, unix_socket=str(socket_path), trusted_proxies=trusted, **LIMITED
        ) as server,
        nginx_in_front_of(server.port if over_tcp else socket_path, nginx_root) as nginx,
    ):
        if not over_tcp:
            conf = (nginx_root / "nginx.conf").read_text()
            assert f"server unix:{socket_path};" in conf
            assert re.search(rf":{server.port}\b", conf) is None  # no way to the TCP port
        assert [await open_ws(nginx.ws_url, "127.0.0.2") for _ in range(3)] == [101, 101, 429]
        # Another client is its own address, not nginx's: it still gets in.
        assert await open_ws(nginx.ws_url, "127.0.0.3") == 101
        # A forged header does not buy a fresh budget: nginx appends the real
        # peer and the server takes the right-most untrusted address.
        forged = {"X-Forwarded-For": "198.51.100.9"}
        assert await open_ws(nginx.ws_url, "127.0.0.2", forged) == 429


async def test_behind_an_untrusted_nginx_over_tcp_every_client_shares_its_address(
    nginx_root: Path, tmp_path: Path
) -> None:
    # The TCP case of the test above without trusted_proxies: nginx is no proxy then.
    async with (
        running_server(tmp_path, trusted_proxies="", **LIMITED) as server,
        nginx_in_front_of(server.port, nginx_root) as nginx,
    ):
        # X-Forwarded-For is ignored: the limit keys on nginx's own address.
        assert [await open_ws(nginx.ws_url, "127.0.0.2") for _ in range(2)] == [101, 101]
        assert await open_ws(nginx.ws_url, "127.0.0.3") == 429


async def test_tripeaks_server_with_unix_socket_serves_nginx_and_removes_its_socket(
    nginx_root: Path, socket_path: Path
) -> None:
    args = [f"--unix-socket={socket_path}", "--trusted-proxies=", "--connect-burst=2"]
    async with server_process([*args, "--connect-rate=0.001"]) as server:
        (started,) = [entry for entry in server.log if entry.get("event") == "server_started"]
        assert started["unix_socket"] == str(socket_path)
        async with nginx_in_front_of(socket_path, nginx_root) as nginx:
            assert [await open_ws(nginx.ws_url, "127.0.0.2") for _ in range(3)] == [101, 101, 429]
            assert await open_ws(nginx.ws_url, "127.0.0.3") == 101
    # The server logs the client's address that nginx forwarded, not the socket's.
    limited = [entry for entry in server.log if entry.get("event") == "connect_rate_limited"]
    assert [entry["address"] for entry in limited] == ["127.0.0.2"]
    assert not socket_path.exists(), "a clean stop removes the socket file"


async def test_a_direct_peer_outside_the_trusted_networks_cannot_forge_its_address(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path, trusted_proxies="127.0.0.1/32", **LIMITED) as server:
        assert [await open_ws(server.ws_url, "127.0.0.5") for _ in range(3)] == [101, 101, 429]
        forged = {"X-Forwarded-For": "203.0.113.77"}
        assert await open_ws(server.ws_url, "127.0.0.5", forged) == 429
        assert await open_ws(server.ws_url, "127.0.0.6") == 101


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made with the openssl command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        if in_ci():
            pytest.fail("openssl is required in CI to make a test certificate")
        pytest.skip("openssl is not installed")
    cert, key = directory / "fullchain.pem", directory / "privkey.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


async def test_nginx_terminates_tls_for_http_and_for_the_websocket(
    nginx_root: Path, socket_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = self_signed_certificate(nginx_root)
    # The bots build their TLS context from the defaults, which read this variable.
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    trusting = ssl.create_default_context(cafile=str(cert))
    async with (
        running_server(
            tmp_path, unix_socket=str(socket_path), trusted_proxies="127.0.0.1/32", **UNTHROTTLED
        ),
        nginx_in_front_of(socket_path, nginx_root, tls=(cert, key)) as nginx,
    ):
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{nginx.url}/healthz", ssl=trusting) as response:
                assert response.status == 200
                assert response.headers["Strict-Transport-Security"] == "max-age=63072000"
            # A client that trusts another certificate is refused: TLS is real.
            (nginx_root / "other").mkdir()
            other, _ = self_signed_certificate(nginx_root / "other")
            stranger = ssl.create_default_context(cafile=str(other))
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await http.get(f"{nginx.url}/healthz", ssl=stranger)
        results = await run_bots(
            nginx.ws_url,
            2,
            host=True,
            options=m.RoomOptions(countdown_s=0, name="over tls"),
            settings=BotSettings(step_timeout_s=30),
        )
        assert results.ok, results.errors
