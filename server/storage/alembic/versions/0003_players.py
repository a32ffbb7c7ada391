"""Players across races: claimed names with their key's hash and rating, the rating
after each rated race, the claimed name each player raced under, why a race ended.

Every new column is nullable, so the races stored before read as guests' races
that ended for an unknown reason (and so stay unrated).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Two columns, two tables, the indexes profiles and the leaderboard read."""
    op.add_column("races", sa.Column("ended_by", sa.Text))
    op.add_column("race_players", sa.Column("account", sa.Text))
    # A profile's races, newest first.
    op.create_index("race_players_account_idx", "race_players", ["account", "race_id"])
    op.create_table(
        "players",
        sa.Column("account", sa.Text, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("key_hash", sa.Text, nullable=False),
        sa.Column("claimed_at_ms", sa.BigInteger, nullable=False),
        sa.Column("mu", sa.Float, nullable=False),
        sa.Column("sigma", sa.Float, nullable=False),
        sa.Column("rated_races", sa.Integer, nullable=False),
    )
    op.create_index("players_leaderboard_idx", "players", ["rated_races", "mu", "sigma"])
    op.create_table(
        "rating_history",
        sa.Column(
            "account",
            sa.Text,
            sa.ForeignKey("players.account", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "race_id",
            sa.Text,
            sa.ForeignKey("races.race_id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("at_ms", sa.BigInteger, nullable=False),
        sa.Column("mu", sa.Float, nullable=False),
        sa.Column("sigma", sa.Float, nullable=False),
    )
    op.create_index("rating_history_at_idx", "rating_history", ["account", "at_ms"])


def downgrade() -> None:
    """Drop the tables and the index; the two columns stay (dropping a column on SQLite
    copies the table, and with foreign keys on that would delete the rows under it)."""
    op.drop_table("rating_history")
    op.drop_index("players_leaderboard_idx", "players")
    op.drop_table("players")
    op.drop_index("race_players_account_idx", "race_players")
