"""The connection guard's view of a peer: counted under its address unless it is a
trusted proxy, remembered per peer within a bounded table."""

from __future__ import annotations

from server.config import Settings
from server.transport.httpguard import COUNTED_PEERS, ConnectionGuard


def _guard() -> ConnectionGuard:
    trusted = Settings(trusted_proxies="10.0.0.0/8, ::1").proxy_networks()
    return ConnectionGuard(10.0, 5, trusted)


def test_a_peer_is_counted_under_its_address_unless_it_is_a_trusted_proxy_every_time() -> None:
    guard = _guard()
    for _ in range(3):
        assert guard._counted_address(("203.0.113.9", 4000)) == "203.0.113.9"
        assert guard._counted_address(("10.1.2.3", 4001)) is None
        assert guard._counted_address(("::1", 4002, 0, 0)) is None
        assert guard._counted_address(("not-an-ip", 1)) == "not-an-ip"
        assert guard._counted_address(None) is None  # a Unix socket
    assert guard.counted_peers == {
        "203.0.113.9": "203.0.113.9", "10.1.2.3": None, "::1": None, "not-an-ip": "not-an-ip",
    }


def test_a_flood_from_ever_new_addresses_keeps_the_peer_table_bounded() -> None:
    guard = _guard()
    for n in range(3 * COUNTED_PEERS):
        address = f"198.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"
        assert guard._counted_address((address, 1)) == address
        assert len(guard.counted_peers) <= COUNTED_PEERS
    assert guard._counted_address(("10.9.9.9", 1)) is None
