"""A throwaway PostgreSQL cluster for tests: initdb into a temp dir, serve on 127.0.0.1.

PostgreSQL refuses to run as root, so when the tests run as root the cluster
belongs to the ``postgres`` system user (Debian's package creates it) and
every server binary runs through ``runuser``.  Clients connect over TCP on
an ephemeral port with trust authentication, so tests need no password.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

#: Superuser created by initdb; also owns the test databases.
DB_USER = "tripeaks"
#: Server options that trade durability for speed: a test cluster is disposable.
_FAST_OPTIONS = (
    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
    "-c max_connections=100 -c shared_buffers=32MB"
)


class PostgresUnavailable(RuntimeError):
    """The PostgreSQL server binaries are not installed here."""


def find_bindir() -> Path | None:
    """The directory holding initdb, pg_ctl and postgres (newest version first), or None."""
    found = []
    for initdb in glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        version = re.search(r"/postgresql/(\d+)/", initdb)
        found.append((int(version[1]) if version else 0, Path(initdb).parent))
    if found:
        return max(found)[1]
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def in_ci() -> bool:
    """True when running under CI, where a missing database must fail, not skip."""
    return os.environ.get("CI", "").lower() not in {"", "0", "false", "no"}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresCluster:
    """A running throwaway cluster; :meth:`stop` removes every trace of it."""

    bindir: Path
    root: Path
    port: int
    run_as: str | None
    _counter: int = field(default=0)

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    @property
    def logfile(self) -> Path:
        return self.root / "server.log"

    def url(self, dbname: str = "postgres") -> str:
        """A ``postgresql://`` URL (the user-facing form) for one database."""
        return f"postgresql://{DB_USER}@127.0.0.1:{self.port}/{dbname}"

    def create_database(self, prefix: str = "t") -> str:
        """Create a fresh, empty database and return its URL."""
        self._counter += 1
        name = f"{prefix}_{os.getpid()}_{self._counter}"
        self._client("createdb", name)
        return self.url(name)

    def drop_database(self, url: str) -> None:
        """Drop a database made by :meth:`create_database` (connections are cut)."""
        name = url.rsplit("/", 1)[1]
        self._client("dropdb", "--if-exists", "--force", name)

    def psql(self, dbname: str, sql: str) -> str:
        """Run one SQL command with psql and return its unaligned output."""
        return self._client(
            "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", dbname, "-c", sql
        )

    def stop(self) -> None:
        """Stop the server at once and delete the cluster."""
        try:
            if (self.datadir / "postmaster.pid").exists():
                _run(
                    self._server_cmd(
                        "pg_ctl", "-D", str(self.datadir), "-m", "immediate", "-w", "stop"
                    ),
                    check=False,
                )
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def pause(self) -> None:
        """Stop the server but keep the cluster, as a database restart or outage would."""
        _run(self._server_cmd("pg_ctl", "-D", str(self.datadir), "-m", "fast", "-w", "stop"))

    def resume(self) -> None:
        """Start a paused server again on the same port."""
        error = _start_on_port(self)
        if error is not None:
            raise RuntimeError(f"PostgreSQL did not restart: {error}\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the server log, for error messages."""
        try:
            text = self.logfile.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no server log)"
        return "\n".join(text.splitlines()[-lines:])

    def _client(self, tool: str, *args: str) -> str:
        cmd = [
            str(self.bindir / tool),
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            DB_USER,
            *args,
        ]
        return _run(cmd).stdout

    def _server_cmd(self, tool: str, *args: str) -> list[str]:
        cmd = [str(self.bindir / tool), *args]
        return _as_user(self.run_as, cmd)


def start_cluster() -> PostgresCluster:
    """initdb and start a cluster on an ephemeral 127.0.0.1 port.

    Raises :class:`PostgresUnavailable` if the binaries are missing and
    ``RuntimeError`` (with the server log) if the server will not start.
    """
    bindir = find_bindir()
    if bindir is None:
        raise PostgresUnavailable(
            "PostgreSQL server binaries not found (apt-get install postgresql)"
        )
    run_as = _server_user()
    # Not under pytest's tmp_path: its parents are private to root and the
    # server user must be able to reach the data directory.
    root = Path(tempfile.mkdtemp(prefix="tripeaks-pg-"))
    if run_as is not None:
        entry = pwd.getpwnam(run_as)
        os.chown(root, entry.pw_uid, entry.pw_gid)
    cluster = PostgresCluster(bindir=bindir, root=root, port=0, run_as=run_as)
    try:
        _run(
            cluster._server_cmd(
                "initdb",
                "-D",
                str(cluster.datadir),
                "-U",
                DB_USER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            )
        )
        _start(cluster)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def start_cluster_for_test() -> PostgresCluster:
    """:func:`start_cluster`, or skip the test when the binaries are missing.

    Outside CI a missing PostgreSQL skips; in CI (``CI`` set), where .ci/run
    installs it, the test fails instead.
    """
    try:
        return start_cluster()
    except PostgresUnavailable as exc:
        if in_ci():
            pytest.fail(f"PostgreSQL is required in CI: {exc}")
        pytest.skip(str(exc))


def _start(cluster: PostgresCluster) -> None:
    last_error = ""
    for _attempt in range(3):
        # The port may be taken between probing and binding; retry with another.
        cluster.port = _free_port()
        error = _start_on_port(cluster)
        if error is None:
            return
        last_error = error
    raise RuntimeError(
        f"PostgreSQL did not start: {last_error.strip()}\n--- server log ---\n{cluster.log_tail()}"
    )


def _start_on_port(cluster: PostgresCluster) -> str | None:
    """Start the server on ``cluster.port``; None when it is ready, else pg_ctl's complaint."""
    options = f"-p {cluster.port} -k {cluster.root} -c listen_addresses=127.0.0.1 {_FAST_OPTIONS}"
    result = _run(
        cluster._server_cmd(
            "pg_ctl",
            "-D",
            str(cluster.datadir),
            "-l",
            str(cluster.logfile),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        ),
        check=False,
    )
    if result.returncode == 0 and _wait_ready(cluster):
        return None
    return result.stderr + result.stdout


def _wait_ready(cluster: PostgresCluster) -> bool:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        probe = subprocess.run(
            [str(cluster.bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(cluster.port)],
            capture_output=True,
            check=False,
        )
        if probe.returncode == 0:
            return True
        time.sleep(0.1)
    return False


def _server_user() -> str | None:
    """Who runs the server binaries: None for ourselves, or a system user when we are root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise RuntimeError("running as root and no 'postgres' user exists to run PostgreSQL")


def _as_user(user: str | None, cmd: list[str]) -> list[str]:
    if user is None:
        return cmd
    if shutil.which("runuser"):
        return ["runuser", "-u", user, "--", *cmd]
    return ["su", user, "-s", "/bin/sh", "-c", " ".join(_quote(part) for part in cmd)]


def _quote(part: str) -> str:
    return "'" + part.replace("'", "'\\''") + "'"


def _run(cmd: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd="/", timeout=120)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({result.returncode}): {result.stderr.strip()}")
    return result
