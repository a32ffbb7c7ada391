"""A real cluster on loopback for tests: redis-server, server nodes as processes, nginx.

Every part is the real program on free 127.0.0.1 ports: ``redis-server`` from
Debian (append-only file on, so a ``kill -9`` and a restart keep what was
acknowledged), ``tripeaks-server`` processes (each its own node, killable
with any signal), and nginx running ``deploy/nginx-cluster.conf`` with only
the ports and paths swapped.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.pgutil import in_ci

ROOT = Path(__file__).resolve().parents[2]
CLUSTER_CONF = ROOT / "deploy" / "nginx-cluster.conf"
SERVER = Path(sys.executable).with_name("tripeaks-server")
#: The nodes deploy/nginx-cluster.conf names, with the ports it gives them.
CONF_NODES = {"n8765": 8765, "n8766": 8766, "n8767": 8767}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def need(program: str, package: str) -> str:
    """The path of ``program``; skip (fail in CI) when it is not installed."""
    found = shutil.which(program) or next(
        (p for p in (f"/usr/bin/{program}", f"/usr/sbin/{program}") if os.path.exists(p)), None
    )
    if found is None:
        reason = f"{program} is not installed (apt-get install {package})"
        if in_ci():
            pytest.fail(reason)
        pytest.skip(reason)
    return found


# ---- Redis -----------------------------------------------------------------------
@dataclass
class RedisServer:
    """A redis-server of the test's own; :meth:`kill` and :meth:`start` again at will."""

    root: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = need("redis-server", "redis-server")
        self.root.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.root),
             "--save", "", "--appendonly", "yes", "--appendfsync", "everysec",
             "--protected-mode", "no", "--logfile", str(self.root / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"redis-server exited: {self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"redis-server did not come up: {self.log()}")

    def kill(self) -> None:
        """``kill -9``, as a crash would."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def log(self) -> str:
        path = self.root / "redis.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""


# ---- nodes -----------------------------------------------------------------------
@dataclass
class Node:
    """One ``tripeaks-server`` process in cluster mode."""

    node_id: str
    process: subprocess.Popen[bytes]
    logfile: Path
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def log(self) -> list[dict[str, Any]]:
        lines = self.logfile.read_text(errors="replace").splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def events(self, name: str) -> list[dict[str, Any]]:
        return [entry for entry in self.log() if entry.get("event") == name]

    def signal(self, signum: int) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signum)

    def kill(self) -> None:
        """``kill -9`` (its deal worker dies with it)."""
        self.signal(signal.SIGKILL)
        self.process.wait()


async def start_node(
    node_id: str, root: Path, redis_url: str, db: str, *, port: int = 0,
    node_url: str | None = None, extra: tuple[str, ...] = (),
) -> Node:
    """Start a node and wait until it listens and its cluster work has started."""
    logfile = root / f"node-{node_id}.log"
    env = {**os.environ, "TRIPEAKS_LOG_LEVEL": "INFO"}
    args = [
        str(SERVER), "--host=127.0.0.1", f"--port={port}", "--deal-workers=1",
        "--deals-ahead=0", f"--db={db}", f"--redis-url={redis_url}", f"--node-id={node_id}",
        "--player-rate=1000", "--player-burst=1000", "--connect-rate=1000",
        "--connect-burst=1000", "--http-rate=1000", "--http-burst=1000",
        "--trusted-proxies=127.0.0.1/32", *extra,
    ]
    if node_url is not None:
        args.append(f"--node-url={node_url}")
    with logfile.open("wb") as out:
        process = subprocess.Popen(args, stderr=out, stdout=subprocess.DEVNULL, env=env)
    node = Node(node_id, process, logfile)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"node {node_id} exited: {node.log()[-5:]}")
        started = node.events("server_started")
        if started and node.events("cluster_ready"):
            node.port = int(started[0]["port"])
            return node
        await asyncio.sleep(0.05)
    raise AssertionError(f"node {node_id} did not start: {node.log()[-5:]}")


async def stop_node(node: Node) -> int:
    """SIGTERM and wait; the exit status."""
    node.signal(signal.SIGTERM)
    for _ in range(600):
        code = node.process.poll()
        if code is not None:
            return code
        await asyncio.sleep(0.05)
    node.kill()
    return -9


# ---- nginx -----------------------------------------------------------------------
@dataclass
class Nginx:
    port: int
    root: Path
    process: subprocess.Popen[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    def stop(self) -> None:
        self.process.send_signal(signal.SIGQUIT)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def cluster_conf_for_test(conf: str, root: Path, port: int, ports: dict[str, int]) -> str:
    """deploy/nginx-cluster.conf with the test's ports and paths (every swap must match)."""
    swaps = [
        (r"^pid /run/nginx\.pid;$", f"pid {root}/nginx.pid;"),
        (r"^error_log /var/log/nginx/error\.log warn;$", f"error_log {root}/error.log info;"),
        (r"^(\s*)access_log /var/log/nginx/access\.log;$", rf"\1access_log {root}/access.log;"),
        (r"proxy_cache_path /var/cache/nginx/tripeaks ", f"proxy_cache_path {root}/cache "),
        (r"^(\s*)listen 80;$", rf"\1listen 127.0.0.1:{free_port()};"),
        (r"^(\s*)listen 443 ssl;$", rf"\1listen 127.0.0.1:{port};"),
        (r"^\s*listen \[::\]:(80|443 ssl);\n", ""),
        (r"^\s*ssl_[a-z_]+ [^;]*;\n", ""),
        (r"^\s*add_header Strict-Transport-Security [^;]*;\n", ""),
        (
            r"^http \{$",
            "http {\n" + "".join(
                f"    {kind}_temp_path {root}/{kind}_temp;\n"
                for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
            ),
        ),
    ]
    assert set(ports) == set(CONF_NODES), "the test runs the nodes the config names"
    for node_id, conf_port in CONF_NODES.items():
        swaps.append((rf"127\.0\.0\.1:{conf_port}\b", f"127.0.0.1:{ports[node_id]}"))
    for pattern, replacement in swaps:
        conf, count = re.subn(pattern, replacement, conf, flags=re.M)
        assert count > 0, f"deploy/nginx-cluster.conf has no line matching {pattern!r}"
    return conf


async def start_nginx(root: Path, ports: dict[str, int]) -> Nginx:
    """nginx with the cluster config in front of ``ports`` (node id -> port)."""
    binary = need("nginx", "nginx")
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    port = free_port()
    conf = cluster_conf_for_test(CLUSTER_CONF.read_text(), root, port, ports)
    (root / "nginx.conf").write_text(conf)
    base = [binary, "-p", str(root), "-e", str(root / "error.log"), "-c", str(root / "nginx.conf")]
    check = subprocess.run([*base, "-t"], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr
    process = subprocess.Popen([*base, "-g", "daemon off;"], stderr=subprocess.DEVNULL)
    nginx = Nginx(port, root, process)
    async with aiohttp.ClientSession() as http:
        for _ in range(200):
            try:
                async with http.get(f"{nginx.url}/healthz") as response:
                    if response.status == 200:
                        return nginx
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    nginx.stop()
    raise AssertionError(f"nginx did not come up: {(root / 'error.log').read_text()}")


# ---- HTTP ------------------------------------------------------------------------
async def get_json(url: str) -> Any:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        return await response.json()


async def room_codes(base: str) -> set[str]:
    """The codes ``GET /api/rooms`` lists at ``base``."""
    body = await get_json(f"{base}/api/rooms")
    return {room["code"] for room in body["rooms"]}


async def eventually(check: Any, timeout: float, step: float = 0.1) -> float:
    """Wait until ``await check()`` is true; the seconds it took (fails after ``timeout``)."""
    started = time.monotonic()
    while True:
        if await check():
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise AssertionError(f"not true within {timeout} s")
        await asyncio.sleep(step)


# ---- the whole cluster -------------------------------------------------------------
@dataclass
class Cluster:
    """Redis, three nodes named as deploy/nginx-cluster.conf names them, and nginx."""

    redis: RedisServer
    db: str
    root: Path
    nodes: dict[str, Node]
    nginx: Nginx | None = None

    def node(self, index: int) -> Node:
        return list(self.nodes.values())[index]

    async def restart(self, node_id: str, extra: tuple[str, ...] = ()) -> Node:
        """Start node ``node_id`` again on its port, after it died."""
        old = self.nodes[node_id]
        self.nodes[node_id] = await start_node(
            node_id, self.root, self.redis.url, self.db, port=old.port,
            node_url=f"/n/{node_id}/ws", extra=extra,
        )
        return self.nodes[node_id]


@asynccontextmanager
async def running_cluster(
    tmp_path: Path, db: str, *, nginx: bool = True, extra: tuple[str, ...] = ()
) -> AsyncIterator[Cluster]:
    """A cluster for the ``async with`` block; everything is stopped after it."""
    redis = RedisServer(tmp_path / "redis")
    redis.start()
    cluster = Cluster(redis, db, tmp_path, {})
    web_root = Path(tempfile.mkdtemp(prefix="tripeaks-nginx-"))
    try:
        for node_id in CONF_NODES:
            cluster.nodes[node_id] = await start_node(
                node_id, tmp_path, redis.url, db, node_url=f"/n/{node_id}/ws", extra=extra,
            )
        if nginx:
            ports = {node_id: node.port for node_id, node in cluster.nodes.items()}
            cluster.nginx = await start_nginx(web_root, ports)
        yield cluster
    finally:
        if cluster.nginx is not None:
            cluster.nginx.stop()
        await asyncio.gather(*(stop_node(node) for node in cluster.nodes.values()))
        redis.kill()
        shutil.rmtree(web_root, ignore_errors=True)
