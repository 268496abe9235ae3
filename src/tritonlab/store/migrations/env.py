"""Alembic's environment for the classroom database. Always run through `store.database.upgrade`, which
hands over an open connection (`config.attributes["connection"]`); there is no alembic.ini.

SQLite runs in batch mode (`render_as_batch`): ALTER TABLE is done by copy-and-move, so later migrations can
change columns on SQLite exactly as on PostgreSQL."""

from __future__ import annotations

from alembic import context

from tritonlab.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    transaction_per_migration=True,
)
with context.begin_transaction():
    context.run_migrations()
