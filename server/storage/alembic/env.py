"""Alembic's entry point for this project's revisions (``versions/``).

The server runs it through :mod:`server.storage.migrate`, which hands over a
connection already inside the upgrade's one transaction (and, on PostgreSQL,
holding the migration lock), so every revision of an upgrade commits together
or not at all.
"""

from __future__ import annotations

from alembic import context

from server.storage.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "these revisions run through the server: use `tripeaks-server db upgrade`"
    )
context.configure(
    connection=connection,
    target_metadata=metadata,
    # SQLite alters a table by copying it; batch mode writes revisions that work on both.
    render_as_batch=True,
)
with context.begin_transaction():
    context.run_migrations()
