"""Server settings: defaults, ``TRIPEAKS_*`` environment variables and command-line flags.

Every setting is a field of :class:`Settings`.  Its environment variable is
``TRIPEAKS_`` plus the field name in capitals, and its flag is ``--`` plus the
field name with dashes (``reconnect_grace_s`` -> ``TRIPEAKS_RECONNECT_GRACE_S``
and ``--reconnect-grace-s``).  A flag beats the environment, which beats the
default.  ``docs/server.md`` lists them all.
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

ENV_PREFIX: Final = "TRIPEAKS_"
_NODE_ID: Final = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
#: A WebSocket URL, or an absolute path on the address the client already uses.
_NODE_URL: Final = re.compile(r"(wss?://[^\s/?#]+)?/[^\s?#]{0,150}")

#: The longest Unix socket path the system takes (``sun_path`` less its closing zero).
MAX_UNIX_PATH: Final = 107

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class SettingsError(ValueError):
    """A setting with a value that cannot be used; the message names it."""


def _doc(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything an operator can tune.  Times ending in ``_s`` are seconds."""

    host: str = field(default="127.0.0.1", metadata=_doc("address to listen on"))
    port: int = field(default=8765, metadata=_doc("TCP port (0 picks a free one)"))
    unix_socket: str = field(
        default="",
        metadata=_doc("also listen on this Unix socket (nginx on this host); empty: TCP only"),
    )
    db: str = field(
        default="",
        metadata=_doc("sqlite:///PATH or postgresql://...; empty: SQLite in the data dir"),
    )
    log_level: str = field(default="INFO", metadata=_doc("DEBUG, INFO, WARNING or ERROR"))
    trusted_proxies: str = field(
        default="",
        metadata=_doc("comma-separated networks whose X-Forwarded-For is believed"),
    )
    heartbeat_s: float = field(default=20.0, metadata=_doc("WebSocket ping interval"))
    hello_timeout_s: float = field(default=10.0, metadata=_doc("time allowed before hello"))
    idle_timeout_s: float = field(default=600.0, metadata=_doc("close a silent connection"))
    request_timeout_s: float = field(
        default=10.0, metadata=_doc("time from connecting to a complete first HTTP request head")
    )
    keepalive_timeout_s: float = field(
        default=15.0, metadata=_doc("idle time before a kept-alive HTTP connection is closed")
    )
    connections_per_address: int = field(
        default=128, metadata=_doc("TCP connections one client address may hold (0: any)")
    )
    http_rate: float = field(default=20.0, metadata=_doc("HTTP requests per s per address"))
    http_burst: float = field(default=100.0, metadata=_doc("HTTP request burst per address"))
    reconnect_grace_s: float = field(default=60.0, metadata=_doc("seat kept after a drop"))
    empty_room_grace_s: float = field(default=30.0, metadata=_doc("empty room lifetime"))
    progress_hz: float = field(default=4.0, metadata=_doc("max progress frames/s per room"))
    max_frame_bytes: int = field(default=65536, metadata=_doc("largest frame (bigger: close 1009)"))
    bad_frame_limit: int = field(default=10, metadata=_doc("bad frames before close 4004"))
    player_rate: float = field(default=30.0, metadata=_doc("player credits refilled per s"))
    player_burst: float = field(default=60.0, metadata=_doc("player credit bucket size"))
    spectator_rate: float = field(default=2.0, metadata=_doc("spectator credits per s"))
    spectator_burst: float = field(default=10.0, metadata=_doc("spectator bucket size"))
    abuse_strikes: int = field(
        default=20, metadata=_doc("frames refused for credit in a window before 1008")
    )
    abuse_share: float = field(
        default=0.5, metadata=_doc("share of a window's frames refused that closes 1008")
    )
    abuse_window_s: float = field(default=2.0, metadata=_doc("window of the abuse rule"))
    address_players: float = field(
        default=10.0, metadata=_doc("players' credit one address shares across connections")
    )
    join_failure_rate: float = field(
        default=0.2, metadata=_doc("failed joins (106) per s per address before 1008")
    )
    join_failure_burst: float = field(default=10.0, metadata=_doc("failed joins burst per address"))
    connect_rate: float = field(default=5.0, metadata=_doc("new connections per s per address"))
    connect_burst: float = field(default=50.0, metadata=_doc("connection burst per address"))
    rooms_per_connection: int = field(default=5, metadata=_doc("rooms one connection may open"))
    max_rooms: int = field(default=10000, metadata=_doc("rooms open at once"))
    deal_workers: int = field(default=2, metadata=_doc("processes that deal (solve) races"))
    deals_ahead: int = field(default=16, metadata=_doc("deals prepared ahead per rule set"))
    deal_hedge_ms: int = field(
        default=10, metadata=_doc("a start dealt at once adds a second seed after (ms; 0: at once)")
    )
    max_race_s: float = field(default=3600.0, metadata=_doc("cap on a race without a limit"))
    shutdown_timeout_s: float = field(default=10.0, metadata=_doc("time to flush on SIGTERM"))
    log_commit_gap_s: float = field(
        default=0.01, metadata=_doc("least time between input-log commits (busy: larger groups)")
    )
    log_commit_gap_busy_s: float = field(
        default=0.02,
        metadata=_doc("the same while the event loop is busy (its thread 85% on a CPU)"),
    )
    redis_url: str = field(
        default="",
        metadata=_doc("redis://HOST:PORT/DB or unix:///PATH: cluster mode (needs a PostgreSQL db)"),
    )
    node_id: str = field(
        default="", metadata=_doc("this node's name in cluster mode (a-z, 0-9, -); empty: random")
    )
    node_url: str = field(
        default="",
        metadata=_doc("where clients reach this node: ws://HOST:PORT/ws or a path like /n/a/ws"),
    )
    lease_s: float = field(
        default=6.0, metadata=_doc("cluster mode: silence before a node's rooms are taken over")
    )

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise SettingsError(f"port must be 0..65535, got {self.port}")
        if self.log_level.upper() not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
            levels = "DEBUG, INFO, WARNING or ERROR"
            raise SettingsError(f"log_level must be {levels}, not {self.log_level}")
        for spec in dataclasses.fields(self):
            value = getattr(self, spec.name)
            if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
                raise SettingsError(f"{spec.name} must not be negative, got {value}")
        socket_bytes = len(os.fsencode(self.unix_socket))
        if socket_bytes > MAX_UNIX_PATH:
            raise SettingsError(
                f"unix_socket must be at most {MAX_UNIX_PATH} bytes long, got {socket_bytes}"
            )
        if self.progress_hz <= 0:
            raise SettingsError("progress_hz must be positive")
        if not 0 < self.abuse_share <= 1:
            raise SettingsError(f"abuse_share must be in (0, 1], got {self.abuse_share}")
        if self.abuse_window_s <= 0:
            raise SettingsError("abuse_window_s must be positive")
        for name in ("request_timeout_s", "keepalive_timeout_s", "http_rate"):
            if getattr(self, name) <= 0:
                raise SettingsError(f"{name} must be positive")
        self.proxy_networks()  # validates the list
        self._check_cluster()

    @property
    def cluster(self) -> bool:
        """True in cluster mode (a Redis URL is set)."""
        return bool(self.redis_url)

    def _check_cluster(self) -> None:
        if self.node_id and not _NODE_ID.fullmatch(self.node_id):
            raise SettingsError(
                "node_id must be 1 to 32 of a-z, 0-9 and '-' (it goes in URLs), "
                f"not {self.node_id!r}"
            )
        if self.node_url and not _NODE_URL.fullmatch(self.node_url):
            raise SettingsError(
                "node_url must be ws://HOST:PORT/PATH, wss://HOST/PATH or a path such as "
                f"/n/a/ws, not {self.node_url!r}"
            )
        if not self.redis_url:
            return
        if not self.redis_url.startswith(("redis://", "rediss://", "unix://")):
            raise SettingsError(
                f"redis_url must start with redis://, rediss:// or unix://, not {self.redis_url!r}"
            )
        if not self.db.startswith(("postgresql:", "postgres:", "postgresql+asyncpg:")):
            raise SettingsError(
                "cluster mode (redis_url) needs a PostgreSQL db shared by every node "
                "(--db postgresql://USER@HOST/DBNAME): a SQLite file belongs to one node"
            )
        if self.lease_s < 1:
            raise SettingsError(f"lease_s must be at least 1 s, got {self.lease_s}")

    def proxy_networks(self) -> tuple[IPNetwork, ...]:
        """The trusted proxy networks, parsed."""
        networks: list[IPNetwork] = []
        for item in self.trusted_proxies.split(","):
            if item.strip():
                try:
                    networks.append(ipaddress.ip_network(item.strip(), strict=False))
                except ValueError as exc:
                    raise SettingsError(f"trusted_proxies: {exc}") from None
        return tuple(networks)


def _convert(spec: dataclasses.Field[Any], raw: str, source: str) -> Any:
    kind = type(spec.default)
    try:
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
    except ValueError:
        raise SettingsError(f"{source}: expected a number, got {raw!r}") from None
    return raw


def from_env(env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """Settings from ``TRIPEAKS_*`` variables, then ``overrides`` on top."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(Settings):
        name = ENV_PREFIX + spec.name.upper()
        if name in env:
            values[spec.name] = _convert(spec, env[name], name)
    values.update(overrides)
    return Settings(**values)


def _metavar(name: str) -> str:
    if name in ("db", "redis_url", "node_url"):
        return "URL"
    if name == "unix_socket":
        return "PATH"
    return "SECONDS" if name.endswith("_s") else name.upper()


def build_parser() -> argparse.ArgumentParser:
    """The ``tripeaks-server`` argument parser, one flag per setting."""
    parser = argparse.ArgumentParser(
        prog="tripeaks-server",
        description="TriPeaks Race server. Every flag also reads TRIPEAKS_<NAME> from the "
        "environment (flag wins).",
    )
    for spec in dataclasses.fields(Settings):
        parser.add_argument(
            "--" + spec.name.replace("_", "-"),
            dest=spec.name,
            metavar=_metavar(spec.name),
            default=None,
            help=f"{spec.metadata['help']} (default {spec.default!r}; env "
            f"{ENV_PREFIX}{spec.name.upper()})",
        )
    return parser


def parse(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> Settings:
    """Settings from the command line and the environment."""
    args = build_parser().parse_args(argv)
    overrides: dict[str, Any] = {}
    for spec in dataclasses.fields(Settings):
        raw = getattr(args, spec.name)
        if raw is not None:
            overrides[spec.name] = _convert(spec, raw, "--" + spec.name.replace("_", "-"))
    return from_env(env, **overrides)
