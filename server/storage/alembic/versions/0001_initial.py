"""The schema from before Alembic: races, their players, every player's move log.

Exactly what ``server/storage/migrations/0001_initial.sql`` made, so a database
made by that code is this revision already: :mod:`server.storage.migrate`
stamps it as 0001 instead of running it.  ``schema_version`` is that code's
bookkeeping table; revision 0002 uses it to turn such a server away.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the four tables and the two indexes."""
    op.create_table(
        "races",
        sa.Column("race_id", sa.Text, primary_key=True),
        sa.Column("room_code", sa.Text, nullable=False),
        sa.Column("room_name", sa.Text, nullable=False),
        sa.Column("options_json", sa.Text, nullable=False),
        sa.Column("practice", sa.Boolean, nullable=False),
        sa.Column("seed", sa.Text, nullable=False),
        sa.Column("commitment", sa.Text, nullable=False),
        sa.Column("wrap", sa.Boolean, nullable=False),
        sa.Column("empty_waste", sa.Boolean, nullable=False),
        sa.Column("candidate", sa.Integer, nullable=False),
        sa.Column("peaks_json", sa.Text, nullable=False),
        sa.Column("waste", sa.Text),
        sa.Column("stock_json", sa.Text, nullable=False),
        sa.Column("solution_json", sa.Text, nullable=False),
        sa.Column("par", sa.Integer),
        sa.Column("started_at_ms", sa.BigInteger, nullable=False),
        sa.Column("ended_at_ms", sa.BigInteger, nullable=False),
    )
    # Newest first is the only listing order.
    op.create_index("races_started_idx", "races", ["started_at_ms", "race_id"])
    op.create_table(
        "race_players",
        sa.Column(
            "race_id",
            sa.Text,
            sa.ForeignKey("races.race_id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("player_id", sa.Text, primary_key=True),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("is_bot", sa.Boolean, nullable=False),
        sa.Column("rank", sa.Integer, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("finish_ms", sa.BigInteger),
        sa.Column("cleared", sa.Integer, nullable=False),
        sa.Column("moves", sa.Integer, nullable=False),
        sa.Column("draws", sa.Integer, nullable=False),
        sa.Column("undos", sa.Integer, nullable=False),
        sa.Column("penalty_ms", sa.BigInteger, nullable=False),
    )
    # The player filter of GET /api/races?player=NAME.
    op.create_index("race_players_name_idx", "race_players", ["name", "race_id"])
    op.create_table(
        "race_moves",
        sa.Column("race_id", sa.Text, primary_key=True),
        sa.Column("player_id", sa.Text, primary_key=True),
        sa.Column("idx", sa.Integer, primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("at_ms", sa.BigInteger, nullable=False),
        sa.Column("action", sa.Text, nullable=False),
        sa.Column("position", sa.Integer),
        sa.Column("accepted", sa.Boolean, nullable=False),
        sa.Column("reason", sa.Integer),
        sa.Column("card", sa.Text),
        sa.ForeignKeyConstraint(
            ["race_id", "player_id"],
            ["race_players.race_id", "race_players.player_id"],
            ondelete="CASCADE",
        ),
    )
    op.create_table(
        "schema_version",
        sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("applied_at_ms", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    """Drop everything."""
    for table in ("race_moves", "race_players", "races", "schema_version"):
        op.drop_table(table)
