"""From here on Alembic keeps the schema: a server from before it must refuse the database.

Such a server reads the highest ``schema_version`` row and refuses any database
above the versions it knows ("upgrade the server"), so a row far above them
keeps it from writing races the newer tables would not account for.
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

#: The ``schema_version`` row that turns away servers from before Alembic.
ALEMBIC_MARK = 1000

_schema_version = sa.table(
    "schema_version",
    sa.column("version", sa.Integer),
    sa.column("name", sa.Text),
    sa.column("applied_at_ms", sa.BigInteger),
)


def upgrade() -> None:
    """Add the marker row."""
    op.bulk_insert(
        _schema_version,
        [{"version": ALEMBIC_MARK, "name": "alembic", "applied_at_ms": int(time.time() * 1000)}],
    )


def downgrade() -> None:
    """Remove the marker row."""
    op.execute(_schema_version.delete().where(_schema_version.c.version == ALEMBIC_MARK))
