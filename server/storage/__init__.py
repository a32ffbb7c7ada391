"""Where finished races are stored: the store (SQLite or PostgreSQL), its tables and
the Alembic revisions that make them."""
