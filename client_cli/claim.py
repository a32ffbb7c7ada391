"""``tripeaks claim NAME`` and ``tripeaks whoami``: a name that is yours on a server.

``claim`` makes a secret key (or takes the one already kept for the name),
says ``hello`` with it, and keeps the key in :mod:`client_cli.keys` once the
server has taken it.  From then on every ``tripeaks`` command that plays under
that name sends the key.  ``whoami`` says which name the client plays under,
whether a key is kept for it, and, asked with ``--server``, whether the
server knows the name as claimed (read from ``/api/players/NAME``, which
never claims anything).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from client_cli.connection import Connection
from client_cli.keys import KeyFile, KeyFileError, new_key
from client_cli.names import choose_name
from client_cli.net import (
    CLIENT_NAME,
    DEFAULT_SERVER,
    ClientError,
    ServerRefused,
    http_base,
    normalise_url,
)
from protocol.wire.errors import ErrorCode
from protocol.wire.session import ClientSession


def add_parsers(subparsers: Any) -> None:
    """Register ``claim`` and ``whoami``."""
    claim = subparsers.add_parser(
        "claim", help="claim a name on a server, so nobody else can play under it"
    )
    claim.add_argument("name", help="the name to claim (1 to 24 printable characters)")
    claim.add_argument("--server", default=DEFAULT_SERVER, help="server URL (default %(default)s)")
    claim.set_defaults(func=_claim)
    whoami = subparsers.add_parser(
        "whoami", help="the name you play under, and whether it is yours"
    )
    whoami.add_argument(
        "--name", default=None, help="the name to ask about (default: the name you play under)"
    )
    whoami.add_argument("--server", default=None, help="also ask this server about the name")
    whoami.set_defaults(func=_whoami)


async def claim_name(url: str, name: str, key: str) -> str:
    """Say hello with ``key``; the name the server welcomed (a refusal raises)."""
    session = ClientSession(name, client=CLIENT_NAME, key=key)
    link = Connection(url, session)
    try:
        welcome = await link.open()
    finally:
        await link.close()
    return welcome.name


def fetch_profile(server: str, name: str) -> dict[str, Any] | None:
    """``GET /api/players/NAME``: the profile, or None when nobody claimed the name."""
    url = f"{http_base(server)}/api/players/{urllib.parse.quote(name, safe='')}"
    try:
        with urllib.request.urlopen(url, timeout=5.0) as response:
            body: dict[str, Any] = json.loads(response.read().decode("utf-8"))
            return body
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise ClientError(f"{url} answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise ClientError(f"cannot reach {url}: {exc}") from None
    except ValueError:
        raise ClientError(f"{url} did not answer with JSON") from None


def _claim(args: argparse.Namespace) -> int:
    keys = KeyFile()
    name = args.name
    if not 1 <= len(name) <= 24 or not name.isprintable():
        print("error: a name is 1 to 24 printable characters", file=sys.stderr)
        return 2
    try:
        url = normalise_url(args.server)
        stored = keys.get(name)
        key = stored.key if stored is not None else new_key()
        asyncio.run(claim_name(url, name, key))
        keys.put(name, key)
    except KeyFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ServerRefused as exc:
        if exc.code == ErrorCode.WRONG_KEY and stored is None:
            print(f"error: {name!r} is already claimed by someone else on {args.server}; "
                  "choose another name", file=sys.stderr)
        else:
            print(f"error: {name!r} cannot be claimed on {args.server}: {exc}", file=sys.stderr)
        return 1
    except ClientError as exc:
        print(f"error: {name!r} cannot be claimed on {args.server}: {exc}", file=sys.stderr)
        return 1
    print(f"{name!r} is yours on {url}: `tripeaks --name {name!r} ...` sends its key.")
    print(f"The key is kept in {keys.path} (only you can read it). It is the only proof "
          "that the name is yours: copy the file to play under the name from another machine.")
    return 0


def _whoami(args: argparse.Namespace) -> int:
    keys = KeyFile()
    name = args.name or choose_name(None).name
    try:
        stored = keys.get(name)
    except KeyFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if stored is None:
        print(f"name: {name} (a guest: no key kept for it; `tripeaks claim {name}` claims it)")
    else:
        print(f"name: {name} (claimed as {stored.name!r}; its key is in {keys.path})")
    if args.server is None:
        return 0
    try:
        profile = fetch_profile(args.server, name)
    except ClientError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if profile is None:
        print(f"on {args.server}: nobody has claimed {name!r}")
        return 0
    owner = "you" if stored is not None else "someone else (no key for it here)"
    rating = profile.get("rating", {})
    print(f"on {args.server}: {profile.get('name')!r} is claimed by {owner}; rating "
          f"{rating.get('rating')} after {rating.get('rated_races')} rated race(s)")
    return 0
