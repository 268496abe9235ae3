"""The classroom database's Alembic migrations, run only through `store.database.upgrade` (no alembic.ini).

Modules:
- `env.py`: Alembic's environment: the connection handed over, batch mode on SQLite.
- `versions/`: the revisions, applied in order.
"""
