"""The names of the cluster's Redis keys, all under ``tp:``.

=============================  ===========================================================
``tp:nodes``                   sorted set: node id -> when it last refreshed (unix ms)
``tp:node:{ID}``               the node's URL for clients, expiring after a lease
``tp:node:{ID}:rooms``         hash: room code -> listing JSON of its public rooms
``tp:room:{CODE}:owner``       ``{node}:{epoch}``, expiring after a lease; the code's claim
``tp:room:{CODE}:epoch``       counter raised by every claim and takeover (the fence)
``tp:room:{CODE}:log``         stream: the room's input log (:mod:`server.cluster.redislog`)
``tp:logs``                    set: every room code that has a log
``tp:leases``                  sorted set: room code -> when its lease ends (for the janitor)
``tp:sess:{SHA256}``           room code of the session whose token hashes so
=============================  ===========================================================

Tokens are never stored, only their SHA-256: reading Redis gives no one a seat.
"""

from __future__ import annotations

from typing import Final

from server.race.lobby import token_digest

PREFIX: Final = "tp:"
NODES: Final = PREFIX + "nodes"
LEASES: Final = PREFIX + "leases"
LOGS: Final = PREFIX + "logs"


def node(node_id: str) -> str:
    """The key holding node ``node_id``'s client URL."""
    return f"{PREFIX}node:{node_id}"


def node_rooms(node_id: str) -> str:
    """The hash of node ``node_id``'s public room listings."""
    return f"{PREFIX}node:{node_id}:rooms"


def owner(code: str) -> str:
    """The key naming room ``code``'s owner and epoch."""
    return f"{PREFIX}room:{code}:owner"


def epoch(code: str) -> str:
    """The counter of room ``code``'s claims."""
    return f"{PREFIX}room:{code}:epoch"


def log(code: str) -> str:
    """The stream of room ``code``'s inputs."""
    return f"{PREFIX}room:{code}:log"


def session(token: str) -> str:
    """The key of the session with reconnect token ``token`` (hashed)."""
    return f"{PREFIX}sess:{token_hash(token)}"


def token_hash(token: str) -> str:
    """A reconnect token's SHA-256, hex: what Redis keeps instead of the token (the same
    digest the lobby and the input log keep, :func:`server.race.lobby.token_digest`)."""
    return token_digest(token)


def owner_value(node_id: str, epoch_no: int) -> str:
    """The owner key's value for ``node_id`` at ``epoch_no``."""
    return f"{node_id}:{epoch_no}"


def parse_owner(value: str) -> tuple[str, int]:
    """``(node id, epoch)`` of an owner key's value."""
    node_id, _, epoch_no = value.rpartition(":")
    return node_id, int(epoch_no)
