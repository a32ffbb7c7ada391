"""Ghosts marked in stored races: ``race_players.ghost``.

A ghost is a stored run the server replayed in a race (docs/protocol.md,
"Ghost races"); its row in that race is marked so the race's record, replay
and profiles never take it for a person.  Rows stored before say false:
ghost races stored before this revision lose the mark (they were unrated
practice races either way).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Add ``race_players.ghost``, false for every row already there."""
    op.add_column(
        "race_players",
        sa.Column("ghost", sa.Boolean, nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    """Nothing: the column stays (dropping a column on SQLite copies the table, and
    with foreign keys on that would delete the rows under it), as in 0003."""
