"""The input log's two tails (server/storage/sqlite_inputlog.py): a SQLite file's appends
go to one of them, in the order they come, and a thread folds them into ``room_inputs``
about once a second, each index page once per fold instead of once per commit.

They have no key: ``room_inputs`` keeps the rows by room.  On PostgreSQL the appends
go straight into ``room_inputs`` and the tails stay empty; readers see all three tables.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

TAILS = ("room_inputs_tail_a", "room_inputs_tail_b")


def upgrade() -> None:
    """Two tables with ``room_inputs``' columns and no key."""
    for name in TAILS:
        op.create_table(
            name,
            sa.Column("room_code", sa.Text, nullable=False),
            sa.Column("idx", sa.Integer, nullable=False),
            sa.Column("epoch", sa.BigInteger, nullable=False),
            sa.Column("input_json", sa.Text, nullable=False),
        )


def downgrade() -> None:
    """Fold what the tails hold into ``room_inputs``, then drop them."""
    for name in TAILS:
        op.execute(
            "INSERT INTO room_inputs (room_code, idx, epoch, input_json)"
            f" SELECT room_code, idx, epoch, input_json FROM {name} t WHERE NOT EXISTS"
            " (SELECT 1 FROM room_inputs r WHERE r.room_code = t.room_code AND r.idx = t.idx)"
        )
        op.drop_table(name)
