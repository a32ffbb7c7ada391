"""The client's address, believing ``X-Forwarded-For`` only from trusted proxies.

Rate limits and logs key on this address.  A peer outside the trusted
networks is the client itself, whatever headers it sends, so a client cannot
dodge a limit by forging the header.  Behind trusted proxies the client is
the right-most address in ``X-Forwarded-For`` that is not itself a trusted
proxy (each proxy appends the address it received the request from).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Final

from server.config import IPNetwork

#: The address of a request that came over the Unix socket without ``X-Forwarded-For``.
LOCAL: Final = "unix"


def is_trusted(address: str, networks: Sequence[IPNetwork]) -> bool:
    """True when ``address`` lies in one of ``networks``."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_address(
    peer: str | None, forwarded_for: str | None, networks: Sequence[IPNetwork]
) -> str:
    """The address to attribute a request to (``"unknown"`` without a peer).

    A peer on the server's Unix socket (``peer`` empty: such peers have no
    address) is a trusted proxy on this host (:mod:`server.transport.unixsocket`);
    without ``X-Forwarded-For`` its requests count as :data:`LOCAL`'s.
    """
    if peer is None:
        return "unknown"
    if peer == "":
        if not forwarded_for:
            return LOCAL
    elif not forwarded_for or not is_trusted(peer, networks):
        return peer
    hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
    for hop in reversed(hops):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            # A garbled entry was written by someone we do not trust: stop here.
            return hop[:64]
        if not is_trusted(hop, networks):
            return hop
    return hops[0] if hops else (peer or LOCAL)
