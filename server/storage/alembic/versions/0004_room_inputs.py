"""Every room's input log (server/storage/inputlog.py), kept until the room closes so
that a restarted server can rebuild its rooms from it.

``input_json`` holds a run of consecutive encoded inputs of the room, one per line, from
index ``idx`` on (server/recovery/codec.py); reconnect tokens appear in it only as
SHA-256 digests.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """One table, keyed by room and the index of the run's first input."""
    op.create_table(
        "room_inputs",
        sa.Column("room_code", sa.Text, primary_key=True),
        sa.Column("idx", sa.Integer, primary_key=True),
        sa.Column("epoch", sa.BigInteger, nullable=False),
        sa.Column("input_json", sa.Text, nullable=False),
    )


def downgrade() -> None:
    """The log holds nothing a finished race needs: dropping it only ends resumption."""
    op.drop_table("room_inputs")
