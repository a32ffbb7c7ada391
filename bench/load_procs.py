"""Starting, pinning, waiting for and stopping the benchmark's processes.

Every process is started in its own session (so its own process group), and
:func:`stop` signals the whole group: the game server's deal pool goes down
with it.  Nothing here talks to anything but 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import IO

LOOPBACK = "127.0.0.1"


def raise_open_file_limit(wanted: int = 65536) -> int:
    """Lift the soft RLIMIT_NOFILE towards ``wanted`` (thousands of sockets)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


#: Files a server or a generator holds besides its players' sockets (the database, its
#: journal and WAL, the listening sockets, the deal workers' pipes, the log), with room
#: to spare.
FILES_BESIDES_SOCKETS = 256


def sockets_for(players: int, spectators_per_room: int = 1) -> int:
    """The sockets of ``players`` in rooms of 4 with ``spectators_per_room`` each."""
    return players // 4 * (4 + spectators_per_room)


def players_within(open_files: int, spectators_per_room: int = 1) -> int:
    """The most players, in rooms of 4 with ``spectators_per_room`` each, whose sockets
    (:func:`sockets_for`) fit in ``open_files`` open files per process (the server and
    the generator each hold one end of every socket), in whole rooms."""
    rooms = max(0, (open_files - FILES_BESIDES_SOCKETS) // sockets_for(4, spectators_per_room))
    return rooms * 4


def free_port() -> int:
    """An ephemeral TCP port on loopback that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


#: Niceness of every benchmark process.  The machine is shared with other
#: people's work; when we may (root), the benchmark's processes outrank it so
#: that the figures describe the server rather than the neighbours.
BENCH_NICE = -10 if hasattr(os, "geteuid") and os.geteuid() == 0 else 0


def _die_with_parent() -> None:
    """In the child: get SIGTERM if the benchmark dies, even by SIGKILL (Linux only)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


_PR_SET_PDEATHSIG = 1


def raise_autogroup(pid: int) -> None:
    """Give the new session's scheduler autogroup the benchmark's niceness.

    With autogroup scheduling (Linux's default on desktops and here) plain
    ``nice`` only ranks processes inside one session; CPU is first shared
    equally between sessions.
    """
    if BENCH_NICE:
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/autogroup").write_text(f"{BENCH_NICE}\n")


def pinned(cmd: Sequence[str], core: int | None) -> list[str]:
    """``cmd`` prefixed with ``taskset -c core`` (when taskset exists) and ``nice``."""
    out = list(cmd)
    if core is not None and shutil.which("taskset") and (os.cpu_count() or 1) > core:
        out = ["taskset", "-c", str(core), *out]
    if BENCH_NICE and shutil.which("nice"):
        out = ["nice", "-n", str(BENCH_NICE), *out]
    return out


def start(
    cmd: Sequence[str],
    *,
    core: int | None,
    log: Path | None = None,
    stdin: int | None = None,
    stdout: int | IO[bytes] | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``cmd`` pinned to ``core`` in a new process group."""
    log_file = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    try:
        proc = subprocess.Popen(
            pinned(cmd, core),
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            stdout=stdout if stdout is not None else log_file,
            stderr=log_file,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        raise_autogroup(proc.pid)
        return proc
    finally:
        if log is not None and not isinstance(log_file, int):
            log_file.close()


def python_module(module: str, *args: str) -> list[str]:
    """The command that runs ``python -m module args`` in this interpreter."""
    return [sys.executable, "-m", module, *args]


def wait_healthy(proc: subprocess.Popen[bytes], port: int, timeout_s: float = 30.0) -> None:
    """Poll ``/healthz`` until it answers 200; raise if the process dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    url = f"http://{LOOPBACK}:{port}/healthz"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode} during start-up")
        try:
            with urllib.request.urlopen(url, timeout=1.0) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout_s:.0f} s")


def wait_for_socket(proc: subprocess.Popen[bytes], path: Path, timeout_s: float = 30.0) -> None:
    """Wait until the server's Unix socket at ``path`` takes a connection; raise if the
    process dies or time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args!r} exited with {proc.returncode} during start-up")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(str(path))
            return
        except OSError:
            time.sleep(0.1)
        finally:
            probe.close()
    raise RuntimeError(f"{path} took no connection within {timeout_s:.0f} s")


def stop(proc: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    """SIGTERM the process group, then SIGKILL it if it has not gone within ``grace_s``."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)
    # The group may outlive its leader (pool workers): make sure nothing is left.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
