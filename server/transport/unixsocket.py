"""The server's Unix socket (``unix_socket``): where nginx on the same host reaches it.

A frame written to a loopback TCP connection costs the writer's core the
whole of TCP on both ends (the receiving side runs in the writer's system
call); written to a Unix socket it is queued for the reader and no more.  With
nginx in front, every player's connection is one upstream connection, so the
node's cost per frame is that of its upstream: docs/performance.md measures
both.

The socket has the reach of a loopback port: any process of the host may
connect (mode ``0666``), and its peers are the trusted proxy
(:func:`server.transport.clientaddr.client_address`).  A socket file left by a
server that died is replaced; one where a server still answers, or a path that
is not a socket, stops the start with a clear reason.  A clean stop removes the
file, unless another server has replaced it since.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from pathlib import Path
from typing import Final

from aiohttp import web

#: The socket file's mode: any local process may connect, as to a loopback port.
MODE: Final = 0o666


class UnixSocketError(OSError):
    """The socket cannot be made at that path; the message says why."""


def clear_stale(path: Path) -> None:
    """Make way for a socket at ``path``: remove a dead server's socket file.

    Raises :class:`UnixSocketError` when the directory is missing, the path is
    not a socket, or a server still answers on it.
    """
    if not path.parent.is_dir():
        raise UnixSocketError(f"{path.parent} is not a directory")
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise UnixSocketError(f"{path} exists and is not a socket; not replacing it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except (ConnectionRefusedError, FileNotFoundError):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # nothing listens: a socket file left by a server that died
        return
    finally:
        probe.close()
    raise UnixSocketError(f"a server already listens on {path}")


async def listen(runner: web.BaseRunner, path: Path) -> int:
    """Serve ``runner`` on a Unix socket at ``path``; the socket file's inode."""
    clear_stale(path)
    site = web.UnixSite(runner, str(path))
    await site.start()
    os.chmod(path, MODE)
    return path.stat().st_ino


def remove(path: Path, inode: int) -> None:
    """Remove the socket file at ``path`` if it is still the one made with ``inode``."""
    with contextlib.suppress(OSError):
        if path.lstat().st_ino == inode:
            path.unlink()
