"""Bringing a database's schema up to date: Alembic revisions on SQLite and PostgreSQL.

The revisions live in ``server/storage/alembic/versions/`` (see the README
there); a new one is a file dropped in that directory whose ``down_revision``
names the newest before it.  :func:`upgrade` runs on a connection the caller
has already put in a transaction, so all pending revisions commit together or
not at all.  A database made by the store from before Alembic (a
``schema_version`` table at version 1, no ``alembic_version``) holds exactly
revision 0001's schema: it is stamped 0001, then upgraded like any other.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

#: The Alembic script directory shipped with the server.
SCRIPT_DIR: Final = Path(__file__).resolve().with_name("alembic")
#: The last ``schema_version`` of the store from before Alembic, and its revision here.
LEGACY_VERSION: Final = 1
LEGACY_REVISION: Final = "0001"


class RevisionsError(Exception):
    """The revision files do not form one line (two heads, say)."""


class UnknownRevisionError(Exception):
    """The database is at a revision these files do not hold: newer code migrated it."""


def config(connection: sa.Connection | None = None, extra: Sequence[Path] = ()) -> Config:
    """An Alembic configuration for the shipped revisions plus the ``extra`` directories."""
    cfg = Config()
    cfg.set_main_option("script_location", str(SCRIPT_DIR))
    cfg.set_main_option("path_separator", "os")
    locations = [str(SCRIPT_DIR / "versions"), *(str(path) for path in extra)]
    cfg.set_main_option("version_locations", os.pathsep.join(locations))
    cfg.attributes["connection"] = connection
    return cfg


def head(extra: Sequence[Path] = ()) -> str:
    """The newest revision: what :func:`upgrade` brings a database to."""
    heads = ScriptDirectory.from_config(config(extra=extra)).get_heads()
    if len(heads) != 1:
        raise RevisionsError(
            f"the schema revisions have {len(heads)} heads ({', '.join(sorted(heads))}): "
            "each revision's down_revision must name the one before it"
        )
    return heads[0]


def current(connection: sa.Connection) -> str | None:
    """The revision the database is at (``None``: empty, or from before Alembic)."""
    return MigrationContext.configure(connection).get_current_revision()


def legacy_version(connection: sa.Connection) -> int | None:
    """The ``schema_version`` of a database from before Alembic, else ``None``."""
    if not sa.inspect(connection).has_table("schema_version"):
        return None
    value = connection.execute(sa.text("SELECT max(version) FROM schema_version")).scalar()
    return None if value is None else int(value)


def upgrade(connection: sa.Connection, extra: Sequence[Path] = ()) -> tuple[str | None, str]:
    """Apply every pending revision on ``connection`` (in a transaction): (before, after)."""
    latest = head(extra)
    cfg = config(connection, extra)
    before = current(connection)
    if before is None:
        legacy = legacy_version(connection)
        if legacy is not None and legacy != LEGACY_VERSION:
            raise UnknownRevisionError(f"schema version {legacy} from before Alembic")
        if legacy is not None:
            command.stamp(cfg, LEGACY_REVISION)
            before = LEGACY_REVISION
    elif before not in known(extra):
        raise UnknownRevisionError(f"revision {before!r}")
    if before != latest:
        command.upgrade(cfg, "head")
    return before, latest


def known(extra: Sequence[Path] = ()) -> frozenset[str]:
    """Every revision id the files hold."""
    script = ScriptDirectory.from_config(config(extra=extra))
    return frozenset(rev.revision for rev in script.walk_revisions())
