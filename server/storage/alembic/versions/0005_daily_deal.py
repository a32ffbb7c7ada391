"""The daily deal: each UTC day's seed and commitment, and every attempt at it.

``daily_attempts`` has one row per attempt, written when the attempt starts;
``(day, player_key)`` is unique, so a claimed name plays each day once (a
guest's key is unique to its attempt).  See :mod:`server.storage.daily`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create ``daily_deals`` and ``daily_attempts``."""
    op.create_table(
        "daily_deals",
        sa.Column("day", sa.Text, primary_key=True),
        sa.Column("seed", sa.Text, nullable=False),
        sa.Column("commitment", sa.Text, nullable=False),
        sa.Column("wrap", sa.Boolean, nullable=False),
        sa.Column("empty_waste", sa.Boolean, nullable=False),
        sa.Column("created_at_ms", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "daily_attempts",
        sa.Column("race_id", sa.Text, primary_key=True),
        sa.Column("day", sa.Text, nullable=False),
        sa.Column("player_key", sa.Text, nullable=False),
        sa.Column("player_id", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("bot", sa.Boolean, nullable=False),
        sa.Column("ranked", sa.Boolean, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("finish_ms", sa.BigInteger),
        sa.Column("cleared", sa.Integer, nullable=False),
        sa.Column("moves", sa.Integer, nullable=False),
        sa.Column("started_at_ms", sa.BigInteger, nullable=False),
    )
    # A player's one attempt a day; also the leaderboard's lookup by day.
    op.create_index("daily_attempts_once", "daily_attempts", ["day", "player_key"], unique=True)


def downgrade() -> None:
    """Drop both tables."""
    op.drop_index("daily_attempts_once", "daily_attempts")
    op.drop_table("daily_attempts")
    op.drop_table("daily_deals")
