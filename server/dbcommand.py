"""``tripeaks-server db upgrade|current``: the database's schema, without running the server.

``upgrade`` applies every pending Alembic revision (what the server does on
start) and says from which revision to which; ``current`` only reports.  The
database is ``--db URL``, else ``$TRIPEAKS_DB``, else the default SQLite file.
Exit status 0 when done, 2 for a database that cannot be used as asked (bad
URL, migrated by newer code, read-only), 1 for any other failure.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

from server.config import ENV_PREFIX
from server.storage import migrate
from server.storage.store import (
    DatabaseNotWritableError,
    DatabaseURLError,
    RaceStore,
    SchemaTooNewError,
    StorageError,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``tripeaks-server db`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="tripeaks-server db", description="The race database's schema (Alembic revisions)."
    )
    parser.add_argument("action", choices=("upgrade", "current"))
    parser.add_argument(
        "--db", metavar="URL", default=None, help=f"database URL (default ${ENV_PREFIX}DB)"
    )
    return parser


async def run(action: str, url: str | None) -> str:
    """Carry out ``action`` on the database at ``url``; the line to print."""
    if action == "current":
        store = await RaceStore.connect(url, upgrade=False)
        try:
            now, newest = await store.revision(), migrate.head()
        finally:
            await store.close()
        state = "up to date" if now == newest else f"upgrade pending to {newest}"
        if now is None:
            state = f"empty, or from before Alembic: upgrade pending to {newest}"
        return f"{store.url}: revision {now or 'none'} ({state})"
    store = await RaceStore.connect(url)
    await store.close()
    before, after = store.upgraded
    if before == after:
        return f"{store.url}: already at revision {after}"
    return f"{store.url}: upgraded from revision {before or 'none'} to {after}"


def main(argv: Sequence[str]) -> int:
    """Entry point of ``tripeaks-server db``."""
    args = build_parser().parse_args(argv)
    url = args.db or os.environ.get(ENV_PREFIX + "DB") or None
    try:
        print(asyncio.run(run(args.action, url)))
    except (DatabaseURLError, SchemaTooNewError, DatabaseNotWritableError) as exc:
        print(f"tripeaks-server db: {exc}", file=sys.stderr)
        return 2
    except StorageError as exc:
        print(f"tripeaks-server db: {exc}", file=sys.stderr)
        return 1
    return 0
